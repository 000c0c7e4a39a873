#include "support/test_data.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

namespace drift::test {

std::string test_data_dir() {
  if (const char* env = std::getenv("DRIFT_TEST_DATA"); env && *env) return env;
  return DRIFT_DEFAULT_TEST_DATA;
}

std::string test_data_path(const std::string& relative) {
  std::filesystem::path p = std::filesystem::path(test_data_dir()) / relative;
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << "test data missing: " << p.string()
                  << " (set DRIFT_TEST_DATA to the shared data folder, default "
                  << DRIFT_DEFAULT_TEST_DATA << ")";
    return "";
  }
  return p.string();
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
