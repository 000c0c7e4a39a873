#pragma once
// BlasGemm: y = x w^T (+ bias) through cuBLASLt for the row counts the skinny kernel does not
// take (prefill, large batches). Matmul descriptors and the chosen algorithm are cached per
// shape; the bias rides in the epilogue (Qwen2's q/k/v bias).
#include <cstdint>
#include <map>
#include <tuple>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "kernels/cuda/ops.h"

namespace drift::cuda_backend {

class BlasGemm {
 public:
  BlasGemm();
  ~BlasGemm();
  BlasGemm(const BlasGemm&) = delete;
  BlasGemm& operator=(const BlasGemm&) = delete;

  // x [rows, k], w [n, k], bias [n] or null, all of `storage` (bf16 or fp16); y [rows, n] of
  // `storage` (y_fp32 false) or fp32.
  void run(const void* x, const void* w, const void* bias, void* y, bool y_fp32, int64_t rows, int64_t n, int64_t k,
           cuda::ElemType storage, cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, bool>;  // rows, n, k, y_fp32, bias, fp16
  Plan& plan(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, Plan> plans_;
  bool bias_epilogue_ = true;  // false once cuBLASLt refused the bias epilogue
};

}  // namespace drift::cuda_backend
