#include "support/cuda_device.h"

#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

#include "core/error.h"

namespace drift::test {

namespace {

bool gpu_required() {
  const char* env = std::getenv("DRIFT_REQUIRE_GPU");
  return env && std::string_view(env) == "1";
}

// Where a GPU must exist (scripts/gpu_tests.sh sets DRIFT_REQUIRE_GPU=1), its absence fails the
// test: a GPU machine whose device is unusable must not pass its suites by skipping them all.
// (The failure's text leaves the skip marker out: ctest would report the failed test as skipped.)
std::unique_ptr<Backend> none(std::string& why, const std::string& reason) {
  if (gpu_required()) {
    why = "no usable GPU: " + reason;
    ADD_FAILURE() << "DRIFT_REQUIRE_GPU=1 but " << reason;
  } else {
    why = std::string(kGpuSkipMarker) + ": " + reason;
  }
  return nullptr;
}

}  // namespace

std::unique_ptr<Backend> cuda_backend_or_null(std::string& why, DType storage) {
  if (!cuda_backend_compiled())
    return none(why, "this build has no CUDA backend (nvcc was not found at configure time)");
  try {
    return create_backend("cuda", storage);
  } catch (const DriftError& e) {
    return none(why, e.what());
  }
}

}  // namespace drift::test
