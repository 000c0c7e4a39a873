#include "apps/shipped_data.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "core/executable_path.h"

namespace drift::app {

std::string shipped_data_file(const std::string& relative) {
  const std::filesystem::path exe = executable_path();
  const std::filesystem::path dir = exe.empty() ? std::filesystem::current_path() : exe.parent_path();
  const std::vector<std::filesystem::path> candidates = {
      dir / "../.." / relative,           // build tree: build/apps/drift
      dir / "../share/drift" / relative,  // install tree: PREFIX/bin/drift
  };
  for (const auto& c : candidates) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(c, ec)) return c.lexically_normal().string();
  }
  return candidates.front().lexically_normal().string();
}

}  // namespace drift::app
