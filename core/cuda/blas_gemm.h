#pragma once
// BlasGemm: y = x w^T (+ bias) through cuBLASLt for the row counts the skinny kernel does not
// take (prefill, large batches). Matmul descriptors and the chosen algorithm are cached per
// shape; the bias rides in the epilogue (Qwen2's q/k/v bias).
#include <cstdint>
#include <map>
#include <tuple>

#include <cublasLt.h>
#include <cuda_runtime.h>

namespace drift::cuda_backend {

class BlasGemm {
 public:
  BlasGemm();
  ~BlasGemm();
  BlasGemm(const BlasGemm&) = delete;
  BlasGemm& operator=(const BlasGemm&) = delete;

  // x bf16 [rows, k], w bf16 [n, k], bias bf16 [n] or null, y [rows, n] bf16 (y_fp32 false) or fp32.
  void run(const void* x, const void* w, const void* bias, void* y, bool y_fp32, int64_t rows, int64_t n, int64_t k,
           cudaStream_t stream);

 private:
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool>;  // rows, n, k, y_fp32, bias
  Plan& plan(const Key& key);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<Key, Plan> plans_;
  bool bias_epilogue_ = true;  // false once cuBLASLt refused the bias epilogue
};

}  // namespace drift::cuda_backend
