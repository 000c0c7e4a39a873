// The experts of a mixture-of-experts MLP with MXFP4 weights (GPT-OSS; kernels/cpu/moe.h is the
// reference), for the few rows of decode and verification: bandwidth-bound, each chosen expert's
// 4-bit weights read once for all the rows routed to it (moe_group's order), dequantized in
// registers, never expanded in memory.
//  - mxfp4_expert_gemv: y[entry] = W_e x[row(entry)] + b_e for every routed entry, fp32 out
//    (dense_expert_gemv: the same over experts stored unquantized, in the storage type);
//  - moe_swiglu: act = (clamp(up) + 1) * min(gate, limit) * sigmoid(alpha * min(gate, limit)),
//    gates at even and ups at odd outputs of gate_up, as transformers' GptOssMLP;
//  - moe_combine: out[row] = sum over the row's slots, in slot order, of weight * y[entry]
//    (no atomics: a row's sum never depends on the other rows), fp32 or the storage type.
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/moe_weight_decode.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kWarp = 32;
constexpr int kGemvWarps = 8;        // output rows in flight per block, one a warp
constexpr int kEntriesPerPass = 8;   // routed rows a warp accumulates at once (registers)

// Grid (expert, output tile); warp w of a block takes output o = tile * kGemvWarps + w. Lanes
// split the input's 32-value groups; each pass serves up to kEntriesPerPass of the expert's rows.
// Both weight formats run this one loop, so they sum in the same order.
template <typename T, typename Rows>
__global__ void __launch_bounds__(kGemvWarps * kWarp)
    expert_gemv_kernel(const T* x, int64_t in, int64_t out, int64_t k, Rows weights, const T* bias,
                       const int32_t* order, const int32_t* offsets, float* y) {
  const int64_t e = blockIdx.x;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t o = static_cast<int64_t>(blockIdx.y) * kGemvWarps + warp;
  if (o >= out) return;
  const int64_t first = offsets[e], last = offsets[e + 1];
  if (first == last) return;  // no row chose this expert: its weights are never read
  const int64_t groups = in / kBlockValues, weight_row = e * out + o;
  const float b = bias ? to_float(bias[e * out + o]) : 0.0f;
  for (int64_t pass = first; pass < last; pass += kEntriesPerPass) {
    const int n = static_cast<int>(min(static_cast<int64_t>(kEntriesPerPass), last - pass));
    float acc[kEntriesPerPass] = {};
    for (int64_t g = lane; g < groups; g += kWarp) {
      float w[kBlockValues];
      weights.group(weight_row, groups, g, w);
#pragma unroll
      for (int j = 0; j < kEntriesPerPass; ++j) {
        if (j >= n) break;
        const int64_t row = order[pass + j] / k;
        float xs[kBlockValues];
        load_group(x + row * in + g * kBlockValues, xs);
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < kBlockValues; ++i) dot = fmaf(w[i], xs[i], dot);
        acc[j] += dot;
      }
    }
#pragma unroll
    for (int j = 0; j < kEntriesPerPass; ++j) {
      if (j >= n) break;
      float v = acc[j];
      for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
      if (lane == 0) y[static_cast<int64_t>(order[pass + j]) * out + o] = v + b;
    }
  }
}

template <typename Rows>
bool launch_expert_gemv(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                        Rows weights, const void* bias, const int32_t* order, const int32_t* offsets, float* y,
                        ElemType storage, cudaStream_t stream) {
  if (in < kBlockValues || in % kBlockValues != 0 || experts < 1 || out < 1 || experts_per_token < 1) return false;
  const dim3 grid(static_cast<unsigned>(experts), static_cast<unsigned>((out + kGemvWarps - 1) / kGemvWarps));
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    expert_gemv_kernel<T><<<grid, kGemvWarps * kWarp, 0, stream>>>(static_cast<const T*>(x), in, out,
                                                                   experts_per_token, weights,
                                                                   static_cast<const T*>(bias), order, offsets, y);
  });
  return true;
}

template <typename T>
__global__ void swiglu_kernel(const float* gate_up, int64_t entries, int64_t inter, float limit, float alpha, T* act) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= entries * inter) return;
  const int64_t entry = i / inter, j = i % inter;
  const float gate = fminf(gate_up[entry * 2 * inter + 2 * j], limit);
  const float up = fminf(fmaxf(gate_up[entry * 2 * inter + 2 * j + 1], -limit), limit);
  act[i] = from_float<T>((up + 1.0f) * (gate / (1.0f + expf(-alpha * gate))));
}

__global__ void combine_kernel(const float* y, const float* weights, int64_t rows, int64_t k, int64_t hidden,
                               void* out, ElemType out_type) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * hidden) return;
  const int64_t row = i / hidden, d = i % hidden;
  float sum = 0.0f;
  for (int64_t s = 0; s < k; ++s) sum = fmaf(weights[row * k + s], y[(row * k + s) * hidden + d], sum);
  store_float(out, out_type, i, sum);
}

}  // namespace

bool mxfp4_expert_gemv(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                       const uint8_t* blocks, const uint8_t* scales, const void* bias, const int32_t* order,
                       const int32_t* offsets, float* y, ElemType storage, cudaStream_t stream) {
  return launch_expert_gemv(x, in, out, experts, experts_per_token, Mxfp4Rows{blocks, scales}, bias, order, offsets,
                            y, storage, stream);
}

bool dense_expert_gemv(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                       const void* weights, const void* bias, const int32_t* order, const int32_t* offsets, float* y,
                       ElemType storage, cudaStream_t stream) {
  bool launched = false;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launched = launch_expert_gemv(x, in, out, experts, experts_per_token, DenseRows<T>{static_cast<const T*>(weights)},
                                  bias, order, offsets, y, storage, stream);
  });
  return launched;
}

void moe_swiglu(const float* gate_up, int64_t entries, int64_t inter, float limit, float alpha, void* act,
                ElemType storage, cudaStream_t stream) {
  const int64_t n = entries * inter;
  if (n == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    swiglu_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(gate_up, entries, inter, limit, alpha,
                                                                                  static_cast<T*>(act));
  });
}

void moe_combine(const float* y, const float* weights, int64_t rows, int64_t experts_per_token, int64_t hidden,
                 void* out, ElemType out_type, cudaStream_t stream) {
  const int64_t n = rows * hidden;
  if (n == 0) return;
  combine_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(y, weights, rows, experts_per_token,
                                                                             hidden, out, out_type);
}

}  // namespace drift::cuda
