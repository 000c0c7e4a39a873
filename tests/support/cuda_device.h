#pragma once
// GPU tests run only where a CUDA device is present (the GPU machine); elsewhere (CI, the
// development machines) they skip with a message saying why.
#include <memory>
#include <string>

#include "core/backend.h"

namespace drift::test {

// The CUDA backend, or null with `why` set: not compiled in, or no usable device.
std::unique_ptr<Backend> cuda_backend_or_null(std::string& why, DType storage = DType::BF16);

}  // namespace drift::test

// In a test body or SetUp: binds `var` to the CUDA backend or skips the test.
#define DRIFT_CUDA_BACKEND_OR_SKIP(var)                                \
  std::string drift_skip_reason_##var;                                 \
  auto var = ::drift::test::cuda_backend_or_null(drift_skip_reason_##var); \
  if (!var) GTEST_SKIP() << drift_skip_reason_##var
