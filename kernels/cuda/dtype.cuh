#pragma once
// Element loads and stores for the activation types the kernels take (fp32, bf16).
#include <cuda_bf16.h>

#include "kernels/cuda/ops.h"

namespace drift::cuda {

__device__ __forceinline__ float load_as_float(const void* p, ElemType t, int64_t i) {
  return t == ElemType::F32 ? static_cast<const float*>(p)[i]
                            : __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

__device__ __forceinline__ void store_float(void* p, ElemType t, int64_t i, float v) {
  if (t == ElemType::F32)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
}

inline unsigned grid_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace drift::cuda
