/* The public header must compile on its own as strict C99 (see tests/abi/CMakeLists.txt). */
#include "drift/plugin.h"

const drift_plugin_t* drift_header_c99_probe(void);
const drift_plugin_t* drift_header_c99_probe(void) { return NULL; }
