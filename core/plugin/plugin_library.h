#pragma once
// PluginLibrary: one opened plugin shared object (Boost.DLL; its headers stay in the .cpp).
// Where a plugin's library is: resolve_plugin_path.
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "drift/plugin.h"

namespace drift {

class PluginLibrary {
 public:
  // Opens the library (RTLD_NOW | RTLD_LOCAL: unresolved symbols fail here, not mid-request,
  // and one plugin's symbols never satisfy another's). Throws DriftError naming the path:
  // "plugin library not found: '<path>'" or "cannot load plugin library '<path>': <dlerror>".
  explicit PluginLibrary(const std::string& path);
  ~PluginLibrary();  // unloads: destroy every instance first
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }
  // The exported DRIFT_PLUGIN_ENTRY_POINT. Throws DriftError naming the symbol and the path.
  drift_plugin_get_fn entry_point() const;

 private:
  struct Impl;
  std::string path_;
  std::unique_ptr<Impl> impl_;
};

// Directories searched for a plugin named without a path: every entry of the DRIFT_PLUGIN_PATH
// environment variable (':'-separated) in order, then the build's plugin directory.
std::vector<std::string> plugin_search_dirs();

// The library of `entry`: its explicit path as given; else, in each search directory, the
// first of lib<name>.so, <name>.so, libdrift_<name>.so, drift_<name>.so that exists. Throws
// DriftError listing every place tried.
std::string resolve_plugin_path(const PluginEntry& entry);

}  // namespace drift
