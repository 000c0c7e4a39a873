// The C++ helper must compile on its own as pedantic C++17, the oldest standard it promises
// (see tests/abi/CMakeLists.txt).
#include "drift/plugin_helpers.hpp"

drift_status_t drift_helpers_cxx17_probe(const drift_host_api_t* host) {
  return drift::plugin::guard(host, "probe", "create", [] {});
}
