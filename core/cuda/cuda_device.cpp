#include "core/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include "core/error.h"

namespace drift::cuda_backend {

int require_cuda_device() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    fail("backend 'cuda': no CUDA device was found (cudaGetDeviceCount: {}, {}); use backend = \"cpu\"",
         cudaGetErrorString(status), cudaGetErrorName(status));
  if (count == 0)
    fail("backend 'cuda': no CUDA device was found (cudaGetDeviceCount counted 0 devices); use backend = \"cpu\"");
  return 0;
}

}  // namespace drift::cuda_backend
