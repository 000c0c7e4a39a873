#pragma once
// What launch shapes depend on: the current device's SM count (cached per process; one GPU).
#include <cuda_runtime.h>

namespace drift::cuda {

inline int multiprocessors() {
  static const int count = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 1;
  }();
  return count;
}

}  // namespace drift::cuda
