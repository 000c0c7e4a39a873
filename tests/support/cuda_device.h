#pragma once
// GPU tests run only where a CUDA device is present (the GPU machine); elsewhere (CI, the
// development machines) they skip with a message saying why, which ctest reports as skipped (the
// suites' SKIP_REGULAR_EXPRESSION matches kGpuSkipMarker). With DRIFT_REQUIRE_GPU=1 (set by
// scripts/gpu_tests.sh) a missing or unusable device fails the test instead.
#include <memory>
#include <string>

#include "core/backend.h"

namespace drift::test {

// The start of every GPU skip message; tests/CMakeLists.txt matches it.
inline constexpr const char* kGpuSkipMarker = "[gpu-skip] GPU test skipped";

// The CUDA backend, or null with `why` set: not compiled in, or no usable device.
std::unique_ptr<Backend> cuda_backend_or_null(std::string& why, DType storage = DType::BF16);

}  // namespace drift::test

// In a test body or SetUp: binds `var` to the CUDA backend or skips the test.
#define DRIFT_CUDA_BACKEND_OR_SKIP(var)                                \
  std::string drift_skip_reason_##var;                                 \
  auto var = ::drift::test::cuda_backend_or_null(drift_skip_reason_##var); \
  if (!var) GTEST_SKIP() << drift_skip_reason_##var
