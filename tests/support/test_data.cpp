#include "support/test_data.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

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
      env && *env ? std::filesystem::path(env) : std::filesystem::path(DRIFT_SOURCE_DIR) / "models/smollm2-135m-instruct";
  return existing_or_missing(dir / "model.safetensors", "run python3 scripts/fetch_model.py, or set DRIFT_SMOLLM2_DIR")
                 .empty()
             ? ""
             : dir.string();
}

std::string drift_exe() { return DRIFT_EXE; }
std::string source_dir() { return DRIFT_SOURCE_DIR; }
std::string binary_dir() { return DRIFT_BINARY_DIR; }

std::string make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = mkdtemp(pattern.data());
  if (!made) ADD_FAILURE() << "mkdtemp failed for " << pattern;
  return made ? std::string(made) : std::string();
}

}  // namespace drift::test
