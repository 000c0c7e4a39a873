/* A shared object that exports something, but not drift_plugin_get. */
#include "test_plugin.h"

DRIFT_EXPORT int drift_plugin_get_typo(void) { return 1; }
