// The factored norm's kernels besides the skinny GEMM's epilogues (residual_norm.cuh): the add
// after a GEMM whose epilogue cannot do it (cuBLASLt above 32 rows, the CUDA-core GEMM), the row
// scales computed ahead (more than 8 rows), the consumer's half after an fp32 cuBLASLt GEMM
// (silu_mul_scaled, rope_qkv_scaled), and the rows formed for a consumer that cannot scale
// (Qwen3's q/k norms, the lm_head, weights not paired, k % 8 != 0).
#include <algorithm>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/paired_rows.cuh"
#include "kernels/cuda/pointwise_math.cuh"
#include "kernels/cuda/qkv_destination.cuh"
#include "kernels/cuda/residual_norm.cuh"

namespace drift::cuda {
namespace {

// Four consecutive 16-bit values as floats (one 8-byte load).
template <typename T>
__device__ __forceinline__ void load4_floats(const T* p, float (&v)[4]) {
  using P = typename Pair<T>::type;
  const uint2 a = *reinterpret_cast<const uint2*>(p);
  const P* pa = reinterpret_cast<const P*>(&a);
  const float2 x = to_float2(pa[0]), y = to_float2(pa[1]);
  v[0] = x.x, v[1] = x.y, v[2] = y.x, v[3] = y.y;
}

// The add after a GEMM when the rows are whole norm groups (dim % 16 == 0): four threads a group
// and four columns a thread, so a warp's accesses are contiguous (a thread a group, as below,
// strides them 64 bytes apart). The group's sum of squares still runs over its columns in
// order from zero: the running sum passes from quarter to quarter by shuffle.
template <typename T>
__global__ void add_residual_factored_quarters_kernel(float* __restrict__ residual, const T* __restrict__ delta,
                                                      FactoredNorm next, int64_t quarters, int64_t dim) {
  const int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, at = q * 4;
  const bool live = q < quarters;  // dead threads still shuffle: the launch has whole warps
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (live) {
    float d[4], w[4];
    load4_floats(delta + at, d);
    load4_floats(static_cast<const T*>(next.weight) + at % dim, w);
    float4* r4 = reinterpret_cast<float4*>(residual + at);
    const float4 r = *r4;
    v[0] = residual_plus(r.x, d[0]), v[1] = residual_plus(r.y, d[1]);
    v[2] = residual_plus(r.z, d[2]), v[3] = residual_plus(r.w, d[3]);
    *r4 = make_float4(v[0], v[1], v[2], v[3]);
    using P = typename Pair<T>::type;
    uint2 out;
    P* o = reinterpret_cast<P*>(&out);
    o[0] = pack_pair<T>(factored_value(v[0], w[0]), factored_value(v[1], w[1]));
    o[1] = pack_pair<T>(factored_value(v[2], w[2]), factored_value(v[3], w[3]));
    *reinterpret_cast<uint2*>(static_cast<T*>(next.factored) + at) = out;
  }
  const int lane = static_cast<int>(threadIdx.x % 32), first_quarter = lane & ~3;
  float sum = 0.0f;  // after step k: group_square_sum over the group's quarters 0 .. k
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float mine = sum;
#pragma unroll
    for (int c = 0; c < 4; ++c) mine = __fmaf_rn(v[c], v[c], mine);
    sum = __shfl_sync(0xffffffffu, mine, first_quarter + k);
  }
  if (live && lane % 4 == 3) next.square_sums[q / 4] = sum;
}

// One thread per (row, norm group) when the rows are not whole groups (dim % 16 != 0): the
// group's columns in order, as the GEMM epilogue's, one element at a time.
template <typename T>
__global__ void add_residual_factored_kernel(float* __restrict__ residual, const T* __restrict__ delta,
                                             FactoredNorm next, int64_t rows, int64_t dim) {
  const int64_t groups = norm_groups(dim);
  const int64_t task = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (task >= rows * groups) return;
  const int64_t row = task / groups, first = (task % groups) * kNormGroup, base = row * dim + first;
  const int count = static_cast<int>(dim - first < kNormGroup ? dim - first : kNormGroup);
  const T* weight = static_cast<const T*>(next.weight) + first;
  T* factored = static_cast<T*>(next.factored) + base;
  float v[kNormGroup];
#pragma unroll
  for (int c = 0; c < kNormGroup; ++c) {
    if (c >= count) break;
    v[c] = residual_plus(residual[base + c], to_float(delta[base + c]));
    residual[base + c] = v[c];
    factored[c] = from_float<T>(factored_value(v[c], to_float(weight[c])));
  }
  next.square_sums[task] = group_square_sum(v, count);
}

// One block per row; every warp finds the row's scale itself (no barrier), then the threads
// store 8 elements at a time (one at a time when dim % 8 != 0).
constexpr int kNormThreads = 128;

template <typename T>
__global__ void __launch_bounds__(kNormThreads)
    rms_norm_from_sums_kernel(const float* __restrict__ residual, const float* __restrict__ square_sums,
                              const T* __restrict__ weight, float eps, int64_t dim, T* __restrict__ out) {
  const int64_t row = blockIdx.x;
  const int groups = static_cast<int>(norm_groups(dim));
  const float inv = row_inv_rms(square_sums + row * groups, groups, static_cast<int>(dim), eps);
  const float* r = residual + row * dim;
  T* o = out + row * dim;
  if (dim % 8 == 0) {
    for (int64_t i = threadIdx.x * 8; i < dim; i += kNormThreads * 8) {
      const float4* r4 = reinterpret_cast<const float4*>(r + i);
      *reinterpret_cast<uint4*>(o + i) =
          normed_pack8<T>(r4[0], r4[1], __ldg(reinterpret_cast<const uint4*>(weight + i)), inv);
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads)
    o[i] = from_float<T>(normed_value(r[i], inv, to_float(weight[i])));
}

// SwiGluOutput's arithmetic (skinny_gemm_mma.cu) on fp32 GEMM sums: scale, round, silu * up. A
// thread per (row, 8 gates): a tile of the paired layout holds gates 8j .. 8j+7 at physical
// columns 16j .. 16j+7 and their ups 8 columns on, so the thread reads two 32-byte runs and
// writes 16 contiguous bytes.
template <typename T>
__global__ void silu_mul_scaled_kernel(const float* __restrict__ gate_up, const float* __restrict__ scales,
                                       T* __restrict__ act, int64_t rows, int64_t inter) {
  const int64_t tiles = inter / 8, n = rows * tiles;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / tiles, j = i % tiles;
    const float4* src = reinterpret_cast<const float4*>(gate_up + r * 2 * inter + 16 * j);
    const float4 g0 = src[0], g1 = src[1], u0 = src[2], u1 = src[3];
    const float g[8] = {g0.x, g0.y, g0.z, g0.w, g1.x, g1.y, g1.z, g1.w};
    const float u[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
    const float s = scales[r];
    using P = typename Pair<T>::type;
    uint4 out;
    P* o = reinterpret_cast<P*>(&out);
#pragma unroll
    for (int e = 0; e < 8; e += 2) {
      float y[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float a = to_float(from_float<T>(__fmul_rn(g[e + h], s)));
        const float b = to_float(from_float<T>(__fmul_rn(u[e + h], s)));
        y[h] = silu_times(a, b);
      }
      o[e / 2] = pack_pair<T>(y[0], y[1]);
    }
    *reinterpret_cast<uint4*>(act + r * inter + 8 * j) = out;
  }
}

// RopeQkvOutput's arithmetic on fp32 GEMM sums. A block per token: its threads split into lanes
// of head_dim / 2 threads, thread i of a lane rotating pair i of every lanes-th head. A pair's
// angle depends on the position and i alone, so each thread computes it once for all heads (a
// block per (token, head) recomputed it per head, and ran 48 blocks of 64 threads a token at the
// 8B shape, too short-lived to keep the memory system busy).
constexpr int kRopeScaledThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kRopeScaledThreads)
    rope_qkv_scaled_kernel(const float* __restrict__ qkv, const float* __restrict__ scales,
                           const T* __restrict__ bias, RopeQkvOutputs out) {
  const int64_t t = blockIdx.x, head_dim = out.head_dim, half = head_dim / 2;
  const int per_head = static_cast<int>(half < kRopeScaledThreads ? half : kRopeScaledThreads);
  const int lanes = kRopeScaledThreads / per_head, lane = static_cast<int>(threadIdx.x) / per_head;
  if (lane >= lanes) return;  // per_head does not divide the block: the spare threads
  const int64_t heads = out.heads + 2 * out.kv_heads;
  const float s = scales[t];
  for (int i = static_cast<int>(threadIdx.x) % per_head; i < half; i += per_head) {  // one pass up to head_dim 512
    const int p = paired_row(i, static_cast<int>(head_dim));                          // i + half at p + 8
    const RopeAngle r = rope_angle(static_cast<float>(out.positions[t]), out.inv_freq[i], out.attention_scale);
#pragma unroll 4
    for (int64_t h = lane; h < heads; h += lanes) {  // unrolled: more loads in flight a thread
      T* dst = qkv_head_row<T>(out, t, h);
      if (!dst) continue;  // a padding token: no KV
      const float* src = qkv + (t * heads + h) * head_dim;
      float lo = __fmul_rn(src[p], s), hi = __fmul_rn(src[p + 8], s);
      if (bias) {
        lo += to_float(bias[h * head_dim + p]);
        hi += to_float(bias[h * head_dim + p + 8]);
      }
      if (is_v_head(out, h)) {
        dst[i] = from_float<T>(lo);
        dst[i + half] = from_float<T>(hi);
        continue;
      }
      const float a = to_float(from_float<T>(lo)), b = to_float(from_float<T>(hi));
      dst[i] = from_float<T>(rope_low(a, b, r));
      dst[i + half] = from_float<T>(rope_high(a, b, r));
    }
  }
}

// A warp a row.
__global__ void row_scales_kernel(const float* __restrict__ square_sums, float eps, int dim,
                                  float* __restrict__ scales) {
  const int groups = static_cast<int>(norm_groups(dim));
  const float inv = row_inv_rms(square_sums + static_cast<int64_t>(blockIdx.x) * groups, groups, dim, eps);
  if (threadIdx.x == 0) scales[blockIdx.x] = inv;
}

}  // namespace

void silu_mul_scaled(const float* gate_up, const float* scales, void* act, int64_t rows, int64_t inter,
                     ElemType storage, cudaStream_t stream) {
  const int64_t n = rows * inter / 8;
  if (n == 0) return;
  constexpr int kThreads = 256;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    silu_mul_scaled_kernel<T><<<grid, kThreads, 0, stream>>>(gate_up, scales, static_cast<T*>(act), rows, inter);
  });
}

void rope_qkv_scaled(const float* qkv, const float* scales, const void* bias, const RopeQkvOutputs& out, int64_t tokens,
                     ElemType storage, cudaStream_t stream) {
  if (tokens == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    rope_qkv_scaled_kernel<T><<<static_cast<unsigned>(tokens), kRopeScaledThreads, 0, stream>>>(
        qkv, scales, static_cast<const T*>(bias), out);
  });
}

void row_scales(const float* square_sums, float eps, int64_t rows, int64_t dim, float* scales, cudaStream_t stream) {
  if (rows == 0) return;
  row_scales_kernel<<<static_cast<unsigned>(rows), 32, 0, stream>>>(square_sums, eps, static_cast<int>(dim), scales);
}

void add_residual_factored(float* residual, const void* delta, const FactoredNorm& next, int64_t rows, int64_t dim,
                           ElemType storage, cudaStream_t stream) {
  const int64_t tasks = rows * norm_groups(dim);
  if (tasks == 0) return;
  constexpr int kThreads = 256;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (dim % kNormGroup == 0) {
      const int64_t quarters = rows * dim / 4;
      add_residual_factored_quarters_kernel<T><<<grid_for(quarters, kThreads), kThreads, 0, stream>>>(
          residual, static_cast<const T*>(delta), next, quarters, dim);
      return;
    }
    add_residual_factored_kernel<T>
        <<<grid_for(tasks, kThreads), kThreads, 0, stream>>>(residual, static_cast<const T*>(delta), next, rows, dim);
  });
}

void rms_norm_from_sums(const float* residual, const float* square_sums, const void* weight, float eps, int64_t rows,
                        int64_t dim, void* out, ElemType storage, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    rms_norm_from_sums_kernel<T><<<static_cast<unsigned>(rows), kNormThreads, 0, stream>>>(
        residual, square_sums, static_cast<const T*>(weight), eps, dim, static_cast<T*>(out));
  });
}

}  // namespace drift::cuda
