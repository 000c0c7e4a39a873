#pragma once
// Where tests find ../shared (goldens, models, tokenizers): env DRIFT_TEST_DATA, else the
// build's default (the `shared` folder beside the source tree), and the fetched chat model.
//
// Missing data: a person who cloned the repository has no ../shared, so a test that needs a
// missing file stops there and ctest counts it as skipped (one "[drift-skip] test data missing:
// PATH" line; the tests' SKIP_REGULAR_EXPRESSION matches it). With DRIFT_REQUIRE_TEST_DATA=1 (CI)
// a missing file is a failure instead, so nothing is skipped there.
#include <stdexcept>
#include <string>

namespace drift::test {

// Thrown by the functions below for missing data when it is not required: gtest reports the
// exception (its message carries the skip marker) and ends the test there.
class MissingTestData : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string test_data_dir();
bool test_data_required();  // DRIFT_REQUIRE_TEST_DATA=1
// `relative` under the test data directory. When it does not exist: the test is skipped
// (MissingTestData), or with DRIFT_REQUIRE_TEST_DATA=1 fails (ADD_FAILURE) and "" is returned.
std::string test_data_path(const std::string& relative);
// SmolLM2-135M-Instruct as scripts/fetch_model.py writes it (env DRIFT_SMOLLM2_DIR, else
// models/smollm2-135m-instruct in the source tree); missing: as test_data_path.
std::string smollm2_model_dir();
// Path of the built `drift` binary and of the source tree.
std::string drift_exe();
std::string source_dir();
std::string binary_dir();
// True in the AddressSanitizer build (scripts/sanitize.sh), where code runs ~100x slower: the
// statistical tests shrink to a smoke run there (the normal build runs them in full).
constexpr bool sanitized_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}
// A fresh temporary directory, unique per call.
std::string make_temp_dir(const std::string& prefix);

}  // namespace drift::test
