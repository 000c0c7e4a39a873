#include "core/cuda/blas_gemm.h"

#include "core/cuda/cuda_check.h"
#include "core/error.h"
#include "kernels/cuda/ops.h"

namespace drift::cuda_backend {

BlasGemm::BlasGemm() {
  DRIFT_CUBLAS(cublasLtCreate(&handle_));
  workspace_bytes_ = size_t{32} << 20;
  DRIFT_CUDA(cudaMalloc(&workspace_, workspace_bytes_));
}

BlasGemm::~BlasGemm() {
  for (auto& [key, p] : plans_) {
    cublasLtMatrixLayoutDestroy(p.a);
    cublasLtMatrixLayoutDestroy(p.b);
    cublasLtMatrixLayoutDestroy(p.c);
    cublasLtMatmulDescDestroy(p.op);
  }
  cudaFree(workspace_);
  cublasLtDestroy(handle_);
}

// Row-major y[rows, n] = x[rows, k] w[n, k]^T is, column-major, y^T[n, rows] = w^T^T x^T: A = w
// ([k, n] column-major, transposed), B = x ([k, rows] column-major), C = y ([n, rows]); the
// epilogue bias runs along C's n rows, one value per output feature.
BlasGemm::Plan& BlasGemm::plan(const Key& key) {
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  const auto [rows, n, k, y_fp32, bias, fp16] = key;
  const cudaDataType_t storage = fp16 ? CUDA_R_16F : CUDA_R_16BF;
  Plan p;
  DRIFT_CUBLAS(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  DRIFT_CUBLAS(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)));
  DRIFT_CUBLAS(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans, sizeof(no_trans)));
  if (bias) {
    // The bias has the output's type (the storage type) by default, which is what the weights hold.
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    DRIFT_CUBLAS(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
  }
  DRIFT_CUBLAS(cublasLtMatrixLayoutCreate(&p.a, storage, k, n, k));
  DRIFT_CUBLAS(cublasLtMatrixLayoutCreate(&p.b, storage, k, rows, k));
  DRIFT_CUBLAS(cublasLtMatrixLayoutCreate(&p.c, y_fp32 ? CUDA_R_32F : storage, n, rows, n));
  cublasLtMatmulPreference_t pref = nullptr;
  DRIFT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  DRIFT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                                    sizeof(workspace_bytes_)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle_, p.op, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    fail("cuBLASLt has no algorithm for a [{} x {}] x [{} x {}]^T GEMM (status {})", rows, k, n, k,
         static_cast<int>(status));
  p.algo = result.algo;
  return plans_.emplace(key, p).first->second;
}

void BlasGemm::run(const void* x, const void* w, const void* bias, void* y, bool y_fp32, int64_t rows, int64_t n,
                   int64_t k, cuda::ElemType storage, cudaStream_t stream) {
  const bool fp16 = storage == cuda::ElemType::F16;
  // The epilogue takes a bias of the output's type; an fp32 output (never biased in the models)
  // or an epilogue cuBLASLt refuses gets the bias added by a kernel afterwards.
  if (bias && (y_fp32 || !bias_epilogue_)) {
    run(x, w, nullptr, y, y_fp32, rows, n, k, storage, stream);
    cuda::add_bias(y, y_fp32 ? cuda::ElemType::F32 : storage, bias, rows, n, storage, stream);
    return;
  }
  if (bias && !plans_.count({rows, n, k, y_fp32, true, fp16})) {
    try {
      plan({rows, n, k, y_fp32, true, fp16});
    } catch (const DriftError&) {
      bias_epilogue_ = false;
      run(x, w, bias, y, y_fp32, rows, n, k, storage, stream);
      return;
    }
  }
  Plan& p = plan({rows, n, k, y_fp32, bias != nullptr, fp16});
  if (bias)
    DRIFT_CUBLAS(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  const float alpha = 1.0f, beta = 0.0f;
  DRIFT_CUBLAS(cublasLtMatmul(handle_, p.op, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo, workspace_,
                              workspace_bytes_, stream));
}

}  // namespace drift::cuda_backend
