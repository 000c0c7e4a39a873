#pragma once
// Where a plugin named without a path is found (docs/plugins.md, "Where plugins are found"):
//   1. the plugin folders that ship with the running executable: the install tree's
//      <bin>/DRIFT_PLUGIN_DIR_FROM_BIN (PREFIX/bin/drift -> PREFIX/lib/drift/plugins), then the
//      build tree's <bin>/../plugins (build/apps/drift -> build/plugins);
//   2. each DRIFT_PLUGIN_PATH entry (':'-separated), in order.
// The shipped folders come first so that a stale DRIFT_PLUGIN_PATH (another install's plugins)
// never shadows the plugins built with this engine; a config's `path =` still overrides any of
// them. In each folder the first of lib<name>.so, <name>.so, libdrift_<name>.so,
// drift_<name>.so that exists wins.
#include <filesystem>
#include <string>
#include <vector>

#include "core/config.h"

namespace drift {

struct PluginSearchDir {
  std::filesystem::path dir;
  std::string origin;  // "install tree", "build tree" or "DRIFT_PLUGIN_PATH"
};

// The search folders for an executable at `executable` (empty: none beside it) and a
// DRIFT_PLUGIN_PATH value (nullptr: unset). Pure, so tests inject both.
std::vector<PluginSearchDir> plugin_search_dirs(const std::filesystem::path& executable, const char* env_path);
// This process's: executable_path() and getenv("DRIFT_PLUGIN_PATH").
std::vector<PluginSearchDir> plugin_search_dirs();

// The file names a plugin called `name` may have, in the order they are tried.
std::vector<std::string> plugin_file_names(const std::string& name);

// The name of every plugin library in `dirs` (files named as plugin_file_names() makes them),
// each once, in search order: what a bare `drift plugins list` shows.
std::vector<std::string> plugin_names_in(const std::vector<PluginSearchDir>& dirs);

struct ResolvedPlugin {
  std::string path;   // absolute, normalized
  std::string found;  // how: "path" (given explicitly) or the search folder's origin
};

// The library of `entry`: its explicit path as given (made absolute); else the first match in
// `dirs`. Throws DriftError listing every file tried, in order.
ResolvedPlugin resolve_plugin(const PluginEntry& entry, const std::vector<PluginSearchDir>& dirs);
ResolvedPlugin resolve_plugin(const PluginEntry& entry);  // with this process's search folders

}  // namespace drift
