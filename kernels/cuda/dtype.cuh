#pragma once
// Element loads and stores for the types the kernels take: fp32 activations, and the 16-bit
// storage types (bf16, fp16) of weights, KV and activations. Kernels over storage are templates
// on T (__nv_bfloat16 or __half); launchers pick T with dispatch_storage.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/ops.h"

namespace drift::cuda {

__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// Two packed elements (4 bytes) as floats.
__device__ __forceinline__ float2 to_float2(const __nv_bfloat162& v) { return __bfloat1622float2(v); }
__device__ __forceinline__ float2 to_float2(const __half2& v) { return __half22float2(v); }
template <typename T>
struct Pair;
template <>
struct Pair<__nv_bfloat16> {
  using type = __nv_bfloat162;
};
template <>
struct Pair<__half> {
  using type = __half2;
};
// Two floats rounded (to nearest) into a pair, as from_float does each.
template <typename T>
__device__ __forceinline__ typename Pair<T>::type pack_pair(float lo, float hi);
template <>
__device__ __forceinline__ __nv_bfloat162 pack_pair<__nv_bfloat16>(float lo, float hi) {
  return __floats2bfloat162_rn(lo, hi);
}
template <>
__device__ __forceinline__ __half2 pack_pair<__half>(float lo, float hi) {
  return __floats2half2_rn(lo, hi);
}

__device__ __forceinline__ float load_as_float(const void* p, ElemType t, int64_t i) {
  switch (t) {
    case ElemType::F32: return static_cast<const float*>(p)[i];
    case ElemType::F16: return __half2float(static_cast<const __half*>(p)[i]);
    default: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
}

__device__ __forceinline__ void store_float(void* p, ElemType t, int64_t i, float v) {
  switch (t) {
    case ElemType::F32: static_cast<float*>(p)[i] = v; break;
    case ElemType::F16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
  }
}

inline unsigned grid_for(int64_t n, int threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// Calls f(StorageTag<T>{}) with T the 16-bit type `t` names (bf16 unless F16).
template <typename T>
struct StorageTag {
  using type = T;
};
template <typename F>
void dispatch_storage(ElemType t, F&& f) {
  if (t == ElemType::F16)
    f(StorageTag<__half>{});
  else
    f(StorageTag<__nv_bfloat16>{});
}

}  // namespace drift::cuda
