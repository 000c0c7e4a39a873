#pragma once
// Where the attention prologue writes head h (of qkv's q | k | v heads) of token t: the token's q
// row, or its KV-cache row at out.slots[t]; null for a padding token's k or v (slot < 0). The one
// definition rope_qkv_kernel and the q/k/v GEMM's epilogue share.
#include <cstdint>

#include "kernels/cuda/ops.h"

namespace drift::cuda {

__device__ __forceinline__ bool is_v_head(const RopeQkvOutputs& out, int64_t h) {
  return h >= out.heads + out.kv_heads;
}

template <typename T>
__device__ __forceinline__ T* qkv_head_row(const RopeQkvOutputs& out, int64_t t, int64_t h) {
  if (h < out.heads) return static_cast<T*>(out.q) + (t * out.heads + h) * out.head_dim;
  const int64_t slot = out.slots[t];
  if (slot < 0) return nullptr;
  const bool v = is_v_head(out, h);
  T* cache = static_cast<T*>(v ? out.v_cache : out.k_cache);
  return cache + (slot * out.kv_heads + h - out.heads - (v ? out.kv_heads : 0)) * out.head_dim;
}

// The launch shape of the kernels that walk the prologue a block per (token, head): a thread per
// rotated pair, 32 to 128.
inline dim3 qkv_head_grid(const RopeQkvOutputs& out, int64_t tokens) {
  return dim3(static_cast<unsigned>(tokens), static_cast<unsigned>(out.heads + 2 * out.kv_heads));
}
inline int qkv_head_threads(const RopeQkvOutputs& out) {
  const int64_t half = out.head_dim / 2;
  return half < 32 ? 32 : static_cast<int>(half > 128 ? 128 : half);
}

}  // namespace drift::cuda
