#pragma once
// Where tests find their reference data (goldens, models, tokenizers, chat templates, prompt sets):
// env DRIFT_TEST_DATA, else the build's default, the checkout's tests/data (which links the
// shipped models/ and datasets/; tests/data/README.md says where each file came from); and the
// chat model scripts/setup.sh fetches.
//
// The data ships with the checkout, so a missing file is a failure naming it, never a skip: only
// the GPU suites skip, and only where no GPU exists (support/cuda_device.h).
#include <stdexcept>
#include <string>

namespace drift::test {

std::string test_data_dir();
// `relative` under the test data directory. When it does not exist the test fails (ADD_FAILURE
// naming the path) and "" is returned; callers ASSERT on that.
std::string test_data_path(const std::string& relative);
// SmolLM2-135M-Instruct as scripts/fetch_model.py writes it (env DRIFT_SMOLLM2_DIR, else
// models/smollm2-135m-instruct in the source tree); missing: as test_data_path.
std::string smollm2_model_dir();
// The build folder the running test belongs to (found from the test executable, so a copied
// build works where it lands), its `drift` binary, the source tree (at the same place relative to
// the build folder as when configured), the build's plugin folder and the test-only oracle
// draft provider.
std::string binary_dir();
std::string drift_exe();
std::string source_dir();
std::string plugin_build_dir();
std::string oracle_plugin();
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
