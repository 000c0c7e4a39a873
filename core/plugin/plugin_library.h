#pragma once
// PluginLibrary: one opened plugin shared object (Boost.DLL; its headers stay in the .cpp).
// Where a plugin's library is found: plugin_search.h.
#include <memory>
#include <string>

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

}  // namespace drift
