#pragma once
// Turns a failed CUDA runtime or cuBLAS call into a DriftError naming the call and the error.
#include <cublasLt.h>
#include <cuda_runtime.h>

namespace drift::cuda_backend {

void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);
// Throws if a kernel launch just failed (bad configuration, no device code for this GPU).
void check_launch(const char* kernel, const char* file, int line);

}  // namespace drift::cuda_backend

#define DRIFT_CUDA(call) ::drift::cuda_backend::check_cuda((call), #call, __FILE__, __LINE__)
#define DRIFT_CUBLAS(call) ::drift::cuda_backend::check_cublas((call), #call, __FILE__, __LINE__)
#define DRIFT_LAUNCHED(kernel) ::drift::cuda_backend::check_launch(kernel, __FILE__, __LINE__)
