// Resolving a plugin's name to its library (see resolve_plugin_path in plugin_library.h).
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/plugin/plugin_library.h"

namespace drift {

std::vector<std::string> plugin_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("DRIFT_PLUGIN_PATH")) {
    std::stringstream list(env);
    for (std::string dir; std::getline(list, dir, ':');)
      if (!dir.empty()) dirs.push_back(dir);
  }
  dirs.push_back(DRIFT_PLUGIN_BUILD_DIR);
  return dirs;
}

std::string resolve_plugin_path(const PluginEntry& entry) {
  if (!entry.path.empty()) return std::filesystem::absolute(entry.path).lexically_normal().string();
  if (entry.name.empty()) fail("a plugin entry has neither a name nor a path");
  const std::string& n = entry.name;
  std::vector<std::string> tried;
  for (const std::string& dir : plugin_search_dirs()) {
    for (const std::string& file : {"lib" + n + ".so", n + ".so", "libdrift_" + n + ".so",
                                    "drift_" + n + ".so"}) {
      std::filesystem::path candidate = std::filesystem::path(dir) / file;
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
      tried.push_back(candidate.string());
    }
  }
  fail("plugin '{}' not found (tried {}); give its path, or add its directory to "
       "DRIFT_PLUGIN_PATH",
       n, fmt::join(tried, ", "));
}

}  // namespace drift
