#include "core/cuda/cuda_check.h"

#include "core/error.h"

namespace drift::cuda_backend {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess)
    fail("CUDA error in {} ({}:{}): {} ({})", call, file, line, cudaGetErrorString(status), cudaGetErrorName(status));
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cuBLAS error in {} ({}:{}): status {}", call, file, line, static_cast<int>(status));
}

void check_launch(const char* kernel, const char* file, int line) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    fail("CUDA kernel {} failed to launch ({}:{}): {}", kernel, file, line, cudaGetErrorString(status));
}

}  // namespace drift::cuda_backend
