// Rotary position embedding (rotate-half layout), angles in fp32 as transformers computes them:
// position * inv_freq, then cos/sin with full range reduction (positions reach 32K and beyond).
#include "kernels/cuda/dtype.cuh"

#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(T* x, const int32_t* positions, const float* inv_freq, int64_t heads,
                            int64_t head_dim, float attention_scale) {
  const int64_t t = blockIdx.x;
  const int64_t half = head_dim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    c *= attention_scale;
    s *= attention_scale;
    for (int64_t h = 0; h < heads; ++h) {
      T* v = x + (t * heads + h) * head_dim;
      const float a = to_float(v[i]), b = to_float(v[i + half]);
      v[i] = from_float<T>(a * c - b * s);
      v[i + half] = from_float<T>(b * c + a * s);
    }
  }
}

// The attention prologue in one pass: block (token, head) rotates a q head into q, rotates a k
// head into its KV slot, or copies a v head there. The rotation is rope_kernel's, operation for
// operation. One block per head keeps every load independent (a decode step has one token).
template <typename T>
__global__ void rope_qkv_kernel(const T* qkv, T* q, T* k_cache, T* v_cache, const int32_t* positions,
                                const int64_t* slots, const float* inv_freq, int64_t heads, int64_t kv_heads,
                                int64_t head_dim, float attention_scale) {
  const int64_t t = blockIdx.x, h = blockIdx.y;
  const int64_t half = head_dim / 2, kv_row = kv_heads * head_dim;
  const T* src = qkv + (t * (heads + 2 * kv_heads) + h) * head_dim;
  const int64_t slot = slots[t];
  if (h >= heads && slot < 0) return;  // a padding token: no KV
  if (h >= heads + kv_heads) {         // a v head: copied
    T* dst = v_cache + slot * kv_row + (h - heads - kv_heads) * head_dim;
    for (int64_t j = threadIdx.x; j < head_dim; j += blockDim.x) dst[j] = src[j];
    return;
  }
  T* dst = h < heads ? q + (t * heads + h) * head_dim : k_cache + slot * kv_row + (h - heads) * head_dim;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    float s, c;
    sincosf(pos * inv_freq[i], &s, &c);
    c *= attention_scale;
    s *= attention_scale;
    const float a = to_float(src[i]), b = to_float(src[i + half]);
    dst[i] = from_float<T>(a * c - b * s);
    dst[i + half] = from_float<T>(b * c + a * s);
  }
}

}  // namespace

void rope_qkv_to_cache(const void* qkv, void* q, void* k_cache, void* v_cache, const int32_t* positions,
                       const int64_t* slots, const float* inv_freq, int64_t tokens, int64_t heads, int64_t kv_heads,
                       int64_t head_dim, float attention_scale, ElemType storage, cudaStream_t stream) {
  if (tokens == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(heads + 2 * kv_heads));
    const int threads = head_dim / 2 < 32 ? 32 : static_cast<int>(head_dim / 2 > 128 ? 128 : head_dim / 2);
    rope_qkv_kernel<T><<<grid, threads, 0, stream>>>(
        static_cast<const T*>(qkv), static_cast<T*>(q), static_cast<T*>(k_cache), static_cast<T*>(v_cache), positions,
        slots, inv_freq, heads, kv_heads, head_dim, attention_scale);
  });
}

void rope(void* x, const int32_t* positions, const float* inv_freq, int64_t tokens, int64_t heads, int64_t head_dim,
          float attention_scale, ElemType storage, cudaStream_t stream) {
  if (tokens == 0) return;
  const int threads = static_cast<int>(head_dim / 2 < 128 ? head_dim / 2 : 128);
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    rope_kernel<T><<<static_cast<unsigned>(tokens), threads > 0 ? threads : 1, 0, stream>>>(
        static_cast<T*>(x), positions, inv_freq, heads, head_dim, attention_scale);
  });
}

}  // namespace drift::cuda
