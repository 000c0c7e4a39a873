#pragma once
// Where tests find ../shared (goldens, models, tokenizers): env DRIFT_TEST_DATA, else the
// build's default (the `shared` folder beside the source tree). A missing file fails the test
// with a message naming the path and the setting.
#include <string>

namespace drift::test {

std::string test_data_dir();
// `relative` under the test data directory; fails the current test (ADD_FAILURE) and returns ""
// when it does not exist.
std::string test_data_path(const std::string& relative);
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
