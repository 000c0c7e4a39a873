#include "apps/version.h"

#include <fmt/format.h>

#include "drift/plugin.h"
#include "drift_build_info.h"  // generated at build time (cmake/build_info.cmake)

namespace drift::app {

namespace {

std::string cuda_line() {
#if defined(DRIFT_WITH_CUDA)
  return fmt::format("CUDA: yes (architectures {})", DRIFT_BUILD_CUDA_ARCHITECTURES);
#else
  return "CUDA: no";
#endif
}

}  // namespace

std::string version_text() {
  return fmt::format("drift {}\ncommit: {}\nplugin ABI: {}.{}\n{}\n", DRIFT_BUILD_VERSION, DRIFT_BUILD_COMMIT,
                     DRIFT_ABI_MAJOR, DRIFT_ABI_MINOR, cuda_line());
}

}  // namespace drift::app
