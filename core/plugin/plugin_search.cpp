#include "core/plugin/plugin_search.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/executable_path.h"

namespace drift {

namespace {

std::filesystem::path normalized(const std::filesystem::path& p) {
  return std::filesystem::absolute(p).lexically_normal();
}

// The plugin name a library file stands for ("libdrift_ngram.so" -> "ngram"), "" for other files:
// the inverse of plugin_file_names, longest prefix first.
std::string plugin_name_of(const std::string& file) {
  if (!file.ends_with(".so")) return "";
  std::string stem = file.substr(0, file.size() - 3);
  for (const char* prefix : {"libdrift_", "drift_", "lib"})
    if (stem.starts_with(prefix)) {
      stem = stem.substr(std::string(prefix).size());
      break;
    }
  return stem;
}

}  // namespace

std::vector<PluginSearchDir> plugin_search_dirs(const std::filesystem::path& executable, const char* env_path) {
  std::vector<PluginSearchDir> dirs;
  if (!executable.empty()) {
    const std::filesystem::path bin = executable.parent_path();
    dirs.push_back({normalized(bin / DRIFT_PLUGIN_DIR_FROM_BIN), "install tree"});
    dirs.push_back({normalized(bin / ".." / "plugins"), "build tree"});
  }
  if (env_path) {
    std::stringstream list(env_path);
    for (std::string dir; std::getline(list, dir, ':');)
      if (!dir.empty()) dirs.push_back({dir, "DRIFT_PLUGIN_PATH"});
  }
  return dirs;
}

std::vector<PluginSearchDir> plugin_search_dirs() {
  return plugin_search_dirs(executable_path(), std::getenv("DRIFT_PLUGIN_PATH"));
}

std::vector<std::string> plugin_file_names(const std::string& name) {
  return {"lib" + name + ".so", name + ".so", "libdrift_" + name + ".so", "drift_" + name + ".so"};
}

std::vector<std::string> plugin_names_in(const std::vector<PluginSearchDir>& dirs) {
  std::vector<std::string> names;
  for (const PluginSearchDir& d : dirs) {
    std::error_code ec;
    std::vector<std::string> here;
    for (const auto& file : std::filesystem::directory_iterator(d.dir, ec))
      if (std::string name = plugin_name_of(file.path().filename().string()); !name.empty()) here.push_back(name);
    std::sort(here.begin(), here.end());  // directory order is arbitrary
    for (const std::string& name : here)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

ResolvedPlugin resolve_plugin(const PluginEntry& entry, const std::vector<PluginSearchDir>& dirs) {
  if (!entry.path.empty()) return {normalized(entry.path).string(), "path"};
  if (entry.name.empty()) fail("a plugin entry has neither a name nor a path");
  std::vector<std::string> tried;
  for (const PluginSearchDir& d : dirs) {
    for (const std::string& file : plugin_file_names(entry.name)) {
      const std::filesystem::path candidate = d.dir / file;
      std::error_code ec;
      if (std::filesystem::is_regular_file(candidate, ec)) return {normalized(candidate).string(), d.origin};
      tried.push_back(candidate.string());
    }
  }
  fail("plugin '{}' not found (tried {}); give its path, or add its directory to DRIFT_PLUGIN_PATH", entry.name,
       tried.empty() ? std::string("nothing: no folder beside the executable and DRIFT_PLUGIN_PATH unset")
                     : fmt::format("{}", fmt::join(tried, ", ")));
}

ResolvedPlugin resolve_plugin(const PluginEntry& entry) { return resolve_plugin(entry, plugin_search_dirs()); }

}  // namespace drift
