#pragma once
// Checks and kernel-type mapping for tensors handed to the CUDA backend's ops.
#include "core/error.h"
#include "core/tensor.h"
#include "kernels/cuda/ops.h"

namespace drift::cuda_backend {

inline cuda::ElemType elem_type(const Tensor& t) {
  if (t.dtype() == DType::F32) return cuda::ElemType::F32;
  if (t.dtype() == DType::BF16) return cuda::ElemType::BF16;
  if (t.dtype() == DType::F16) return cuda::ElemType::F16;
  fail("the CUDA backend computes on float32, bfloat16 or float16 tensors, got {}", dtype_name(t.dtype()));
}

inline void expect_dtype(const Tensor& t, DType dtype, const char* what) {
  DRIFT_CHECK(t.dtype() == dtype, "CUDA backend: {} must be {}, got {} {}", what, dtype_name(dtype),
              dtype_name(t.dtype()), t.shape_string());
}

inline void expect_device(const Tensor& t, const char* what) {
  DRIFT_CHECK(t.empty() || t.device() == Device::CUDA, "CUDA backend: {} {} is not on the GPU", what, t.shape_string());
}

}  // namespace drift::cuda_backend
