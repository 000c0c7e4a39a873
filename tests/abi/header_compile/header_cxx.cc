// The public header must compile on its own as pedantic C++ (see tests/abi/CMakeLists.txt).
#include "drift/plugin.h"

static_assert(sizeof(drift_tensor_t) > 0, "drift_tensor_t is complete");
const drift_plugin_t* drift_header_cxx_probe() { return nullptr; }
