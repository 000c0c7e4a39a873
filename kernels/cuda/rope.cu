// Rotary position embedding (rotate-half layout), angles in fp32 as transformers computes them:
// position * inv_freq, then cos/sin with full range reduction (positions reach 32K and beyond).
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/paired_rows.cuh"
#include "kernels/cuda/pointwise_math.cuh"
#include "kernels/cuda/qkv_destination.cuh"

namespace drift::cuda {
namespace {

template <typename T>
__global__ void rope_kernel(T* x, const int32_t* positions, const float* inv_freq, int64_t heads,
                            int64_t head_dim, float attention_scale) {
  const int64_t t = blockIdx.x;
  const int64_t half = head_dim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const RopeAngle r = rope_angle(pos, inv_freq[i], attention_scale);
    for (int64_t h = 0; h < heads; ++h) {
      T* v = x + (t * heads + h) * head_dim;
      const float a = to_float(v[i]), b = to_float(v[i + half]);
      v[i] = from_float<T>(rope_low(a, b, r));
      v[i + half] = from_float<T>(rope_high(a, b, r));
    }
  }
}

// The attention prologue in one pass: block (token, head) rotates a q head into q, rotates a k
// head into its KV slot, or copies a v head there. The rotation is rope_kernel's, operation for
// operation. One block per head keeps every load independent (a decode step has one token).
// `paired`: qkv's heads are in the paired-rows layout (paired_rows.cuh, span head_dim).
template <typename T>
__global__ void rope_qkv_kernel(const T* qkv, bool paired, RopeQkvOutputs out) {
  const int64_t t = blockIdx.x, h = blockIdx.y, head_dim = out.head_dim, half = head_dim / 2;
  const T* src = qkv + (t * (out.heads + 2 * out.kv_heads) + h) * head_dim;
  auto at = [&](int64_t i) { return src[paired ? paired_row(static_cast<int>(i), static_cast<int>(head_dim)) : i]; };
  T* dst = qkv_head_row<T>(out, t, h);
  if (!dst) return;          // a padding token: no KV
  if (is_v_head(out, h)) {  // a v head: copied
    for (int64_t j = threadIdx.x; j < head_dim; j += blockDim.x) dst[j] = at(j);
    return;
  }
  const float pos = static_cast<float>(out.positions[t]);
  for (int64_t i = threadIdx.x; i < half; i += blockDim.x) {
    const RopeAngle r = rope_angle(pos, out.inv_freq[i], out.attention_scale);
    const float a = to_float(at(i)), b = to_float(at(i + half));
    dst[i] = from_float<T>(rope_low(a, b, r));
    dst[i + half] = from_float<T>(rope_high(a, b, r));
  }
}

}  // namespace

void rope_qkv_to_cache(const void* qkv, bool paired, const RopeQkvOutputs& out, int64_t tokens, ElemType storage,
                       cudaStream_t stream) {
  if (tokens == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    rope_qkv_kernel<T>
        <<<qkv_head_grid(out, tokens), qkv_head_threads(out), 0, stream>>>(static_cast<const T*>(qkv), paired, out);
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
