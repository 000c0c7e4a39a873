#include "core/plugin/plugin_library.h"

#include <filesystem>

#include <boost/dll/shared_library.hpp>

#include "core/error.h"

namespace drift {
namespace {

// Boost.DLL reports a failed dlopen as "...(dlerror system message: TEXT): <errno text>", where the
// errno text is whatever errno held ("Bad file descriptor"), unrelated to the failure. The reason
// a person can act on is dlerror's TEXT alone.
std::string load_failure_reason(const std::string& what) {
  const std::string marker = "dlerror system message: ";
  const size_t begin = what.find(marker);
  const size_t end = what.rfind("): ");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return what;
  return what.substr(begin + marker.size(), end - begin - marker.size());
}

}  // namespace

struct PluginLibrary::Impl {
  boost::dll::shared_library library;
};

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail("plugin library not found: '{}'", path);
  try {
    namespace mode = boost::dll::load_mode;
    impl_ = std::make_unique<Impl>(Impl{boost::dll::shared_library(
        boost::dll::fs::path(path), mode::rtld_now | mode::rtld_local)});
  } catch (const std::exception& e) {
    fail("cannot load plugin library '{}': {}", path, load_failure_reason(e.what()));
  }
}

PluginLibrary::~PluginLibrary() = default;

drift_plugin_get_fn PluginLibrary::entry_point() const {
  if (!impl_->library.has(DRIFT_PLUGIN_ENTRY_POINT))
    fail("plugin library '{}' does not export the entry point '{}' (define it with DRIFT_EXPORT; "
         "extern \"C\" in C++)",
         path_, DRIFT_PLUGIN_ENTRY_POINT);
  return &impl_->library.get<const drift_plugin_t*(const drift_host_api_t*, uint32_t)>(
      DRIFT_PLUGIN_ENTRY_POINT);
}

}  // namespace drift
