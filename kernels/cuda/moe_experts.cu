// The experts of a mixture-of-experts MLP with MXFP4 weights (GPT-OSS; kernels/cpu/moe.h is the
// reference), for the few rows of decode and verification: bandwidth-bound, each chosen expert's
// 4-bit weights read once for all the rows routed to it (moe_group's order), dequantized in
// registers, never expanded in memory.
//  - mxfp4_expert_gemv: y[entry] = W_e x[row(entry)] + b_e for every routed entry, fp32 out
//    (dense_expert_gemv: the same over experts stored unquantized, in the storage type); the
//    _swiglu variants apply GPT-OSS's clamped SwiGLU to each (gate, up) pair of outputs in the
//    epilogue and write the activation (the same bits as moe_swiglu over y);
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
constexpr int kGemvWarps = 8;       // warps a block
constexpr int kRowsPerWarp = 4;     // output rows a warp (two (gate, up) pairs for the SwiGLU epilogue)
constexpr int kEntriesPerPass = 8;  // routed rows a warp accumulates at once (registers)

// GPT-OSS's clamped SwiGLU of one (gate, up) pair, as transformers' GptOssMLP.
__device__ __forceinline__ float swiglu(float gate, float up, float limit, float alpha) {
  gate = fminf(gate, limit);
  up = fminf(fmaxf(up, -limit), limit);
  return (up + 1.0f) * (gate / (1.0f + expf(-alpha * gate)));
}

// A group of 32 inputs is summed in one fixed order whatever the weights' format: the pairs
// (8q + i, 8q + i + 4) for q = 0..3, i = 0..3 -- the order MXFP4's nibbles decode in two at a time.
// The group's sum then joins the row's accumulator scaled by the group's factor:
// acc = fma(sum, factor, acc).
//
// MXFP4: a code's three magnitude bits shifted into an fp16's exponent and mantissa (and its sign
// into the sign) give the e2m1 value times 2^-14 exactly (0.5's code lands on the fp16 subnormal
// 2^-15), so a pair decodes in three integer ops and one conversion; the group's sum is then
// scaled back by 2^14 (kDotScale) and joins with the E8M0 scale as its factor (two steps: 2^14
// times a scale near the top of E8M0's range would overflow). Dense experts hold the values
// themselves (1, 1). Scaling by powers of two is exact, so both formats give the same bits for
// the same values.
struct Mxfp4Group {
  static constexpr float kDotScale = 16384.0f;
  uint4 codes;
  float factor;
  __device__ __forceinline__ float2 pair(int q, int i) const {
    const uint32_t word = (q == 0 ? codes.x : q == 1 ? codes.y : q == 2 ? codes.z : codes.w) >> (4 * i);
    const uint32_t bits = ((word & 0x00070007u) << 9) | ((word & 0x00080008u) << 12);
    return __half22float2(*reinterpret_cast<const __half2*>(&bits));
  }
};
struct Mxfp4Loader {
  const uint8_t* blocks;  // [experts, out, in / 32, 16]
  const uint8_t* scales;  // [experts, out, in / 32]
  using Group = Mxfp4Group;
  __device__ __forceinline__ Group load(int64_t row, int64_t groups, int64_t g) const {
    const int64_t at = row * groups + g;
    return Group{*reinterpret_cast<const uint4*>(blocks + at * (kBlockValues / 2)), e8m0(scales[at])};
  }
};
template <typename T>
struct DenseGroup {
  uint4 raw[4];  // 32 values of T
  static constexpr float kDotScale = 1.0f, factor = 1.0f;
  __device__ __forceinline__ float value(int i) const {
    const T* v = reinterpret_cast<const T*>(raw);
    return to_float(v[i]);
  }
  __device__ __forceinline__ float2 pair(int q, int i) const { return make_float2(value(8 * q + i), value(8 * q + i + 4)); }
};
template <typename T>
struct DenseLoader {
  const T* weights;  // [experts, out, in]
  using Group = DenseGroup<T>;
  __device__ __forceinline__ Group load(int64_t row, int64_t groups, int64_t g) const {
    const uint4* src = reinterpret_cast<const uint4*>(weights + (row * groups + g) * kBlockValues);
    return Group{{src[0], src[1], src[2], src[3]}};
  }
};

// 32 consecutive inputs of one x row (storage type T), kept packed.
template <typename T>
struct XGroup {
  uint4 raw[4];
  __device__ __forceinline__ void load(const T* src) {
    const uint4* words = reinterpret_cast<const uint4*>(src);
#pragma unroll
    for (int i = 0; i < 4; ++i) raw[i] = words[i];
  }
  __device__ __forceinline__ float value(int i) const { return to_float(reinterpret_cast<const T*>(raw)[i]); }
};

template <typename Group, typename T>
__device__ __forceinline__ float group_dot(const Group& w, const XGroup<T>& x) {
  float sum = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 p = w.pair(q, i);
      sum = fmaf(p.x, x.value(8 * q + i), sum);
      sum = fmaf(p.y, x.value(8 * q + i + 4), sum);
    }
  return sum;
}

template <typename T>
struct GemvKernelArgs {
  ExpertGemvArgs a;
  float* y = nullptr;   // [entries, out] (no epilogue)
  T* act = nullptr;     // [entries, out / 2] (the SwiGLU epilogue)
  float limit = 0.0f, alpha = 0.0f;
};

// Grid (active expert slot, output tile): block (s, t) serves the s-th expert that has entries
// (moe_group's active list; slots past their count exit at once, so decode's grid is its few
// experts, not all of them) and outputs [t * 32, t * 32 + 32), kRowsPerWarp consecutive ones a
// warp. Lanes split the input's 32-value groups; a pass serves up to kEntriesPerPass of the
// expert's entries, each x group loaded once for the warp's rows. An entry's sum runs over its
// groups in lane order, then across lanes in a fixed butterfly: it never depends on the other
// entries (batch invariance).
template <typename T, typename Loader, bool SWIGLU>
__global__ void __launch_bounds__(kGemvWarps * kWarp) expert_gemv_kernel(GemvKernelArgs<T> k, Loader weights) {
  const ExpertGemvArgs& a = k.a;
  const int slot = blockIdx.x;
  if (slot >= a.active[0]) return;
  const int64_t e = a.active[1 + slot];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  const int64_t o0 = (static_cast<int64_t>(blockIdx.y) * kGemvWarps + warp) * kRowsPerWarp;
  if (o0 >= a.out) return;
  const int64_t first = a.offsets[e], last = a.offsets[e + 1];
  const int64_t groups = a.in / kBlockValues;
  const T* x = static_cast<const T*>(a.x);
  const T* bias = static_cast<const T*>(a.bias);
  int64_t row_of[kRowsPerWarp];  // weight rows (clamped: rows past `out` are computed, never written)
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) row_of[r] = e * a.out + min(o0 + r, a.out - 1);
  for (int64_t pass = first; pass < last; pass += kEntriesPerPass) {
    const int n = static_cast<int>(min(static_cast<int64_t>(kEntriesPerPass), last - pass));
    int64_t x_row[kEntriesPerPass];
#pragma unroll
    for (int j = 0; j < kEntriesPerPass; ++j) x_row[j] = j < n ? a.order[pass + j] / a.rows_divisor * a.in : 0;
    float acc[kEntriesPerPass][kRowsPerWarp] = {};
    for (int64_t g = lane; g < groups; g += kWarp) {
      typename Loader::Group w[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) w[r] = weights.load(row_of[r], groups, g);
#pragma unroll
      for (int j = 0; j < kEntriesPerPass; ++j) {
        if (j >= n) break;
        XGroup<T> xg;
        xg.load(x + x_row[j] + g * kBlockValues);
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
          acc[j][r] = fmaf(group_dot(w[r], xg) * w[r].kDotScale, w[r].factor, acc[j][r]);
      }
    }
#pragma unroll
    for (int j = 0; j < kEntriesPerPass; ++j) {
      if (j >= n) break;
      float h[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        float v = acc[j][r];
        for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
        h[r] = v + (bias ? to_float(bias[row_of[r]]) : 0.0f);
      }
      if (lane != 0) continue;
      const int64_t entry = a.order[pass + j];
      if constexpr (SWIGLU) {
        const int64_t inter = a.out / 2;
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; r += 2)
          if (o0 + r + 1 < a.out) k.act[entry * inter + (o0 + r) / 2] = from_float<T>(swiglu(h[r], h[r + 1], k.limit, k.alpha));
      } else {
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
          if (o0 + r < a.out) k.y[entry * a.out + o0 + r] = h[r];
      }
    }
  }
}

bool gemv_shape_ok(const ExpertGemvArgs& a) {
  return a.in >= kBlockValues && a.in % kBlockValues == 0 && a.experts >= 1 && a.out >= 1 && a.rows_divisor >= 1;
}

template <bool SWIGLU, typename MakeLoader>
bool launch_expert_gemv(const ExpertGemvArgs& a, MakeLoader&& make_loader, float* y, void* act, float limit,
                        float alpha, cudaStream_t stream) {
  if (!gemv_shape_ok(a) || (SWIGLU && a.out % 2 != 0)) return false;
  if (a.entries == 0) return true;
  constexpr int64_t kOutputsPerBlock = kGemvWarps * kRowsPerWarp;
  const dim3 grid(static_cast<unsigned>(min(a.experts, a.entries)),
                  static_cast<unsigned>((a.out + kOutputsPerBlock - 1) / kOutputsPerBlock));
  dispatch_storage(a.storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GemvKernelArgs<T> k{a, y, static_cast<T*>(act), limit, alpha};
    const auto loader = make_loader(tag);
    expert_gemv_kernel<T, std::decay_t<decltype(loader)>, SWIGLU><<<grid, kGemvWarps * kWarp, 0, stream>>>(k, loader);
  });
  return true;
}

auto mxfp4_loader(const uint8_t* blocks, const uint8_t* scales) {
  return [=](auto) { return Mxfp4Loader{blocks, scales}; };
}
auto dense_loader(const void* weights) {
  return [=](auto tag) { return DenseLoader<typename decltype(tag)::type>{static_cast<const typename decltype(tag)::type*>(weights)}; };
}

template <typename T>
__global__ void swiglu_kernel(const float* gate_up, int64_t entries, int64_t inter, float limit, float alpha, T* act) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= entries * inter) return;
  const int64_t entry = i / inter, j = i % inter;
  act[i] = from_float<T>(swiglu(gate_up[entry * 2 * inter + 2 * j], gate_up[entry * 2 * inter + 2 * j + 1], limit, alpha));
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

bool mxfp4_expert_gemv(const ExpertGemvArgs& a, const uint8_t* blocks, const uint8_t* scales, float* y,
                       cudaStream_t stream) {
  return launch_expert_gemv<false>(a, mxfp4_loader(blocks, scales), y, nullptr, 0.0f, 0.0f, stream);
}

bool dense_expert_gemv(const ExpertGemvArgs& a, const void* weights, float* y, cudaStream_t stream) {
  return launch_expert_gemv<false>(a, dense_loader(weights), y, nullptr, 0.0f, 0.0f, stream);
}

bool mxfp4_expert_gemv_swiglu(const ExpertGemvArgs& a, const uint8_t* blocks, const uint8_t* scales, float limit,
                              float alpha, void* act, cudaStream_t stream) {
  return launch_expert_gemv<true>(a, mxfp4_loader(blocks, scales), nullptr, act, limit, alpha, stream);
}

bool dense_expert_gemv_swiglu(const ExpertGemvArgs& a, const void* weights, float limit, float alpha, void* act,
                              cudaStream_t stream) {
  return launch_expert_gemv<true>(a, dense_loader(weights), nullptr, act, limit, alpha, stream);
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
