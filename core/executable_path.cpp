#include "core/executable_path.h"

#include <system_error>

namespace drift {

std::filesystem::path executable_path() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe;
}

}  // namespace drift
