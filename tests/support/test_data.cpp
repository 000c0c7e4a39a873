#include "support/test_data.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <gtest/gtest.h>

#include "core/executable_path.h"

namespace drift::test {

std::string test_data_dir() {
  if (const char* env = std::getenv("DRIFT_TEST_DATA"); env && *env) return env;
  return DRIFT_DEFAULT_TEST_DATA;
}

namespace {

std::string existing_or_missing(const std::filesystem::path& p, const std::string& hint) {
  if (std::filesystem::exists(p)) return p.string();
  ADD_FAILURE() << "test data missing: " << p.string() << " (" << hint << ")";
  return "";
}

}  // namespace

std::string test_data_path(const std::string& relative) {
  return existing_or_missing(std::filesystem::path(test_data_dir()) / relative,
                             std::string("it ships in the checkout's tests/data (the default, ") +
                                 DRIFT_DEFAULT_TEST_DATA + "); DRIFT_TEST_DATA overrides it");
}

std::string smollm2_model_dir() {
  const char* env = std::getenv("DRIFT_SMOLLM2_DIR");
  const std::filesystem::path dir =
      env && *env ? std::filesystem::path(env) : std::filesystem::path(source_dir()) / "models/smollm2-135m-instruct";
  return existing_or_missing(dir / "model.safetensors", "run python3 scripts/fetch_model.py, or set DRIFT_SMOLLM2_DIR")
                 .empty()
             ? ""
             : dir.string();
}

namespace {

// The build folder holding the running test: the nearest folder above it with apps/drift. Found
// from the executable rather than compiled in, so a build copied elsewhere (the GPU machine
// receives build/apps/drift, build/plugins and the test binaries) tests where it lands.
std::filesystem::path locate_binary_dir() {
  const std::filesystem::path exe = executable_path();
  for (std::filesystem::path dir = exe.parent_path(); !exe.empty() && dir != dir.parent_path();
       dir = dir.parent_path()) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(dir / "apps" / "drift", ec)) return dir;
  }
  return DRIFT_BINARY_DIR;
}

}  // namespace

std::string binary_dir() {
  static const std::string dir = locate_binary_dir().string();
  return dir;
}
std::string drift_exe() { return (std::filesystem::path(binary_dir()) / "apps" / "drift").string(); }
std::string source_dir() {
  return (std::filesystem::path(binary_dir()) / DRIFT_SOURCE_FROM_BINARY).lexically_normal().string();
}
std::string plugin_build_dir() { return (std::filesystem::path(binary_dir()) / "plugins").string(); }
std::string oracle_plugin() { return (std::filesystem::path(binary_dir()) / DRIFT_ORACLE_PLUGIN_FROM_BINARY).string(); }

std::string make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  if (!made) ADD_FAILURE() << "mkdtemp failed for " << pattern;
  return made ? std::string(made) : std::string();
}

}  // namespace drift::test
