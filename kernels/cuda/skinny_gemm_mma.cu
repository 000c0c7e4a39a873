// Tensor-core skinny GEMM: y = x w^T for 1..32 rows with k % 8 == 0 (every real model). Bound by
// reading w once: a block owns 16 output features (one m16n8k16 M tile, the weight rows) and its
// 8 warps split k; the rows of x are the N side, one n-tile of 8 per 8 rows.
//
// The dot product does not care in which order k is summed, as long as w and x agree: lane
// (g = lane / 4, q = lane % 4) loads 16 contiguous bytes (k0 + 8q .. +8) of weight rows g and
// g + 8 and of x row g, and the two MMAs of a 32-wide k step take physical k {8q .. 8q+3} and
// {8q+4 .. 8q+7} as the fragment's logical columns {2q, 2q+1, 2q+8, 2q+9}. So every load is a
// full 16-byte vector and no shuffling is needed.
//
// Batch invariance: an output element is accumulated by MMAs in a fixed k order within each warp
// and the 8 warps' partials are added in warp order; neither depends on how many rows the call
// has or where the row sits in its n-tile, so a row gets the same bits in a 1-row decode and in
// a 17-row verification.
//
// Epilogues: a block's finished sums go to an epilogue functor. StoreOutput stores y (+ bias).
// With a weight in the paired-rows layout (paired_rows.cuh), lane output c0/c1 (feature g) and
// c2/c3 (feature g + 8) are the two halves of a pair, so the lane that sums one sums both and a
// pointwise op follows in registers: SwiGLU (gate, up), or RoPE and the KV write (x[i],
// x[i + head_dim / 2]). Each rounds its sums to storage first, as the stored GEMM output would be,
// so it gives the bits of the GEMM followed by the standalone kernel.
//
// The factored norm (residual_norm.cuh): ResidualAddOutput adds into the fp32 residual stream,
// stores the updated value times the next norm's weight as the next GEMM's input, and leaves the
// sum of squares of the block's 16 features per row (a block's features are one norm group). The
// next GEMM, given RowScales, scales each row's sums by the row's 1 / rms before its epilogue.
// With one row tile a warp adds one row's sums up after the k loop (asked into L1 before it, so
// the scale delays no weight load); with more, a small kernel computes the scales before the
// launch: adding up four rows' sums in each of 1,792 blocks cost more than that kernel (batch 32
// +6%), and it is the same function, so a row gets the same bits either way. (Working the sums in
// the k loop's first trip instead measured no better at batch 1 and worse at 8 and 32: registers.)

#include "kernels/cuda/device_info.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/paired_rows.cuh"
#include "kernels/cuda/pointwise_math.cuh"
#include "kernels/cuda/qkv_destination.cuh"
#include "kernels/cuda/residual_norm.cuh"

namespace drift::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kFeatures = 16;
static_assert(kFeatures == kNormGroup, "ResidualAddOutput: a block's features are one norm group");
// 32-wide k steps whose loads are issued before the first MMA: fewer with more row tiles, whose
// x fragments take the registers (occupancy). A warp's steps run in the same order either way.
template <int NT>
constexpr int kUnroll = NT >= 3 ? 2 : 4;
// Blocks an SM holds: two, or three with a shorter unroll when that turns a grid of 2-3 blocks an
// SM (q/k/v at batch 1: 384 blocks) into one wave instead of one and a half.
constexpr int kBlocksPerSm = 2;
constexpr int kWideBlocksPerSm = 3, kWideUnroll = 3;

template <typename T>
__device__ __forceinline__ uint4 load16(const T* base, int64_t row, int64_t k, int64_t row_elems, bool ok) {
  return ok ? __ldg(reinterpret_cast<const uint4*>(base + row * row_elems + k)) : make_uint4(0, 0, 0, 0);
}

// Weights are read once per step and are most of the step's bytes, so their loads say so:
// - L2::evict_first: they stream through L2 without pushing out what the step's small kernels
//   reread (the residual stream, norm weights, the forward's metadata, activations), which would
//   otherwise each wait on DRAM (a batch-1 add_rms_norm went from 7.7 to 3.6 us);
// - L2::256B: a miss fetches the whole 256-byte span. A warp's load covers 64 bytes of each of 8
//   rows and the next 64 bytes of those rows belong to the next warp, so without the hint DRAM
//   sees 64-byte requests; with it, one request serves four warps (batch-1 decode 4% faster).
__device__ __forceinline__ uint64_t streaming_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
template <typename T>
__device__ __forceinline__ uint4 load16_streaming(const T* base, int64_t row, int64_t k, int64_t row_elems, bool ok,
                                                  uint64_t policy) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (ok)
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(base + row * row_elems + k), "l"(policy));
  return v;
}

// y [rows, n] (of y_type) = the sums + bias (or none).
template <typename T>
struct StoreOutput {
  static constexpr bool kPairs = false, kRowSums = false;
  const T* bias;
  void* y;
  ElemType y_type;
  int n;
  __device__ void operator()(int row, int feature, float sum) const {
    if (bias) sum += to_float(bias[feature]);
    store_float(y, y_type, static_cast<int64_t>(row) * n + feature, sum);
  }
};

// residual [rows, n] += the sums + bias, rounded to storage first, and the next norm factored:
// returns the updated value, whose squares the kernel sums per row into square_sums.
template <typename T>
struct ResidualAddOutput {
  static constexpr bool kPairs = false, kRowSums = true;
  const T* bias;
  float* residual;
  FactoredNorm next;
  int n;
  __device__ float operator()(int row, int feature, float sum) const {
    if (bias) sum += to_float(bias[feature]);
    const int64_t i = static_cast<int64_t>(row) * n + feature;
    const float v = residual_plus(residual[i], to_float(from_float<T>(sum)));
    residual[i] = v;
    const float w = to_float(static_cast<const T*>(next.weight)[feature]);
    static_cast<T*>(next.factored)[i] = from_float<T>(factored_value(v, w));
    return v;
  }
};

// act [rows, inter] = silu(gate) * up; feature is the gate's physical row, its up 8 rows on.
template <typename T>
struct SwiGluOutput {
  static constexpr bool kPairs = true, kRowSums = false;
  T* act;
  int inter;
  __device__ void operator()(int row, int feature, float gate, float up) const {
    const float g = to_float(from_float<T>(gate)), u = to_float(from_float<T>(up));
    act[static_cast<int64_t>(row) * inter + paired_low_row(feature)] = from_float<T>(silu_times(g, u));
  }
};

// The attention prologue (rope_qkv_to_cache's): feature's head is a q, k or v head; its pair is
// (i, i + head_dim / 2) of that head. (Fetching the bias, position and slot and computing the
// angle before the block streams its weights measured the same: the epilogue is not the tail.)
template <typename T>
struct RopeQkvOutput {
  static constexpr bool kPairs = true, kRowSums = false;
  const T* bias;
  RopeQkvOutputs out;
  __device__ void operator()(int row, int feature, float lo, float hi) const {
    const int head_dim = static_cast<int>(out.head_dim), head = feature / head_dim;
    const int i = paired_low_row(feature % head_dim), half = head_dim / 2;
    T* dst = qkv_head_row<T>(out, row, head);
    if (!dst) return;  // a padding token: no KV
    if (bias) {        // not + 0 without one: -0 + 0 is +0, and the separate ops keep -0
      lo += to_float(bias[feature]);
      hi += to_float(bias[feature + 8]);
    }
    if (is_v_head(out, head)) {  // stored as it is
      dst[i] = from_float<T>(lo);
      dst[i + half] = from_float<T>(hi);
      return;
    }
    const float a = to_float(from_float<T>(lo)), b = to_float(from_float<T>(hi));
    const RopeAngle r = rope_angle(static_cast<float>(out.positions[row]), out.inv_freq[i], out.attention_scale);
    dst[i] = from_float<T>(rope_low(a, b, r));
    dst[i + half] = from_float<T>(rope_high(a, b, r));
  }
};

template <typename T, int NT, int UNROLL, int BLOCKS_PER_SM, typename Epilogue>
__global__ void __launch_bounds__(kWarps * 32, BLOCKS_PER_SM)
    skinny_mma_kernel(const T* __restrict__ x, const T* __restrict__ w, int rows, int n, int k, RowScales scales,
                      Epilogue epilogue) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, q = lane % 4;
  const int f0 = blockIdx.x * kFeatures;
  const int f_lo = min(f0 + g, n - 1), f_hi = min(f0 + g + 8, n - 1);  // clamped rows are never stored
  const int steps = (k + 31) / 32;

  float acc[NT][4];
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = 0.0f;

  const uint64_t policy = streaming_policy();
  // The weights of group s0 (UNROLL steps, kWarps apart) into wl/wh.
  constexpr int kGroup = kWarps * UNROLL;
  auto load_weights = [&](int s0, uint4 (&wl)[UNROLL], uint4 (&wh)[UNROLL]) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int kk = (s0 + u * kWarps) * 32 + 8 * q;
      const bool in = s0 + u * kWarps < steps && kk < k;
      wl[u] = load16_streaming(w, f_lo, kk, k, in, policy);
      wh[u] = load16_streaming(w, f_hi, kk, k, in, policy);
    }
  };
  // Each group's weight loads go out while the previous group multiplies.
  uint4 wl[UNROLL], wh[UNROLL];
  load_weights(warp, wl, wh);
  // Each row's 1 / rms, for the epilogue: one row tile adds its sums up after the k loop (asked
  // for now, into L1); more read the scales computed before the launch (RowScales).
  __shared__ float row_scale[NT * 8];
  const int groups = static_cast<int>(norm_groups(k));
  if constexpr (NT == 1) {
    if (scales.square_sums) prefetch_l1(scales.square_sums, static_cast<int64_t>(rows) * groups);
  } else {
    if (scales.square_sums && threadIdx.x < rows) row_scale[threadIdx.x] = scales.workspace[threadIdx.x];
  }

  for (int s0 = warp; s0 < steps; s0 += kGroup) {
    uint4 xv[UNROLL][NT];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int kk = (s0 + u * kWarps) * 32 + 8 * q;
      const bool in = s0 + u * kWarps < steps && kk < k;
#pragma unroll
      for (int t = 0; t < NT; ++t) xv[u][t] = load16(x, t * 8 + g, kk, k, in && t * 8 + g < rows);
    }
    uint4 next_l[UNROLL], next_h[UNROLL];
    load_weights(s0 + kGroup, next_l, next_h);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (s0 + u * kWarps >= steps) break;
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        mma<T>(acc[t], wl[u].x, wh[u].x, wl[u].y, wh[u].y, xv[u][t].x, xv[u][t].y);
        mma<T>(acc[t], wl[u].z, wh[u].z, wl[u].w, wh[u].w, xv[u][t].z, xv[u][t].w);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      wl[u] = next_l[u];
      wh[u] = next_h[u];
    }
  }

  if constexpr (NT == 1)
    if (scales.square_sums && warp < rows) {  // a warp a row
      const float inv = row_inv_rms(scales.square_sums + static_cast<int64_t>(warp) * groups, groups, k, scales.eps);
      if (lane == 0) row_scale[warp] = inv;
    }
  auto scaled = [&](int row, float sum) { return scales.square_sums ? __fmul_rn(sum, row_scale[row]) : sum; };

  // Partials of the 8 warps, added in warp order.
  __shared__ float partial[kWarps][NT][4][32];
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][t][i][lane] = acc[t][i];
  __syncthreads();
  __shared__ float row_values[Epilogue::kRowSums ? NT * 8 : 1][kFeatures];
  if constexpr (Epilogue::kPairs) {
    for (int idx = threadIdx.x; idx < NT * 2 * 32; idx += kWarps * 32) {
      const int t = idx / 64, i = (idx / 32) % 2, l = idx % 32;
      float lo = 0.0f, hi = 0.0f;
      for (int v = 0; v < kWarps; ++v) {
        lo += partial[v][t][i][l];
        hi += partial[v][t][i + 2][l];
      }
      const int feature = f0 + l / 4, row = t * 8 + 2 * (l % 4) + i;  // hi: feature + 8
      if (feature < n && row < rows) epilogue(row, feature, scaled(row, lo), scaled(row, hi));
    }
  } else {
    for (int idx = threadIdx.x; idx < NT * 4 * 32; idx += kWarps * 32) {
      const int t = idx / 128, i = (idx / 32) % 4, l = idx % 32;
      float sum = 0.0f;
      for (int v = 0; v < kWarps; ++v) sum += partial[v][t][i][l];
      // c0, c1: feature g, rows 2q, 2q + 1; c2, c3: feature g + 8.
      const int feature = f0 + l / 4 + (i >= 2 ? 8 : 0);
      const int row = t * 8 + 2 * (l % 4) + (i % 2);
      if (feature >= n || row >= rows) continue;
      if constexpr (Epilogue::kRowSums) row_values[row][feature - f0] = epilogue(row, feature, scaled(row, sum));
      else epilogue(row, feature, scaled(row, sum));
    }
  }
  if constexpr (Epilogue::kRowSums) {  // the block's features are norm group blockIdx.x
    __syncthreads();
    if (threadIdx.x < rows) {
      float v[kFeatures];
#pragma unroll
      for (int c = 0; c < kFeatures; ++c) v[c] = row_values[threadIdx.x][c];
      epilogue.next.square_sums[static_cast<int64_t>(threadIdx.x) * gridDim.x + blockIdx.x] =
          group_square_sum(v, min(kFeatures, n - f0));
    }
  }
}

// make(StorageTag<T>) gives the epilogue for storage type T.
template <int NT, typename MakeEpilogue>
void launch(const void* x, const void* w, int64_t rows, int64_t n, int64_t k, const RowScales& scales,
            ElemType storage, cudaStream_t stream, MakeEpilogue make) {
  const unsigned blocks = grid_for(n, kFeatures);
  const int64_t sms = multiprocessors();
  const bool wide = blocks > kBlocksPerSm * sms && blocks <= kWideBlocksPerSm * sms;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Epilogue = decltype(make(tag));
    auto kernel = skinny_mma_kernel<T, NT, kUnroll<NT>, kBlocksPerSm, Epilogue>;
    if constexpr (NT == 1)  // more rows' x fragments leave no registers for a third block
      if (wide) kernel = skinny_mma_kernel<T, NT, kWideUnroll, kWideBlocksPerSm, Epilogue>;
    kernel<<<blocks, kWarps * 32, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                               static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k),
                                               scales, make(tag));
  });
}

template <typename MakeEpilogue>
bool run(const void* x, const void* w, int64_t rows, int64_t n, int64_t k, const RowScales& scales, ElemType storage,
         cudaStream_t stream, MakeEpilogue make) {
  if (k % 8 != 0 || rows < 1 || rows > kSkinnyMaxRows) return false;
  if (scales.square_sums && rows > 8) {
    if (!scales.workspace) return false;
    row_scales(scales.square_sums, scales.eps, rows, k, scales.workspace, stream);
  }
  if (rows <= 8) launch<1>(x, w, rows, n, k, scales, storage, stream, make);
  else if (rows <= 16) launch<2>(x, w, rows, n, k, scales, storage, stream, make);
  else if (rows <= 24) launch<3>(x, w, rows, n, k, scales, storage, stream, make);  // a 16-node tree's forward
  else launch<4>(x, w, rows, n, k, scales, storage, stream, make);
  return true;
}

auto swiglu_output(void* act, int64_t inter) {
  return [=](auto tag) {
    using T = typename decltype(tag)::type;
    return SwiGluOutput<T>{static_cast<T*>(act), static_cast<int>(inter)};
  };
}

auto rope_qkv_output(const void* bias, const RopeQkvOutputs& out) {
  return [=](auto tag) {
    using T = typename decltype(tag)::type;
    return RopeQkvOutput<T>{static_cast<const T*>(bias), out};
  };
}

int64_t qkv_features(const RopeQkvOutputs& out) { return (out.heads + 2 * out.kv_heads) * out.head_dim; }

}  // namespace

bool skinny_gemm_mma(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows,
                     int64_t n, int64_t k, ElemType storage, cudaStream_t stream) {
  return run(x, w, rows, n, k, RowScales{}, storage, stream, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return StoreOutput<T>{static_cast<const T*>(bias), y, y_type, static_cast<int>(n)};
  });
}

bool skinny_gemm_mma_add_residual(const void* x, const void* w, const void* bias, float* residual,
                                  const FactoredNorm& next, int64_t rows, int64_t n, int64_t k, ElemType storage,
                                  cudaStream_t stream) {
  return run(x, w, rows, n, k, RowScales{}, storage, stream, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return ResidualAddOutput<T>{static_cast<const T*>(bias), residual, next, static_cast<int>(n)};
  });
}

bool skinny_gemm_mma_swiglu(const void* x, const void* w_paired, void* act, int64_t rows, int64_t inter, int64_t k,
                            ElemType storage, cudaStream_t stream) {
  return skinny_gemm_mma_swiglu(x, RowScales{}, w_paired, act, rows, inter, k, storage, stream);
}

bool skinny_gemm_mma_swiglu(const void* x, const RowScales& scales, const void* w_paired, void* act, int64_t rows,
                            int64_t inter, int64_t k, ElemType storage, cudaStream_t stream) {
  if (!can_pair_rows(2 * inter, 2 * inter)) return false;
  return run(x, w_paired, rows, 2 * inter, k, scales, storage, stream, swiglu_output(act, inter));
}

bool skinny_gemm_mma_rope_qkv(const void* x, const void* w_paired, const void* bias, const RopeQkvOutputs& out,
                              int64_t rows, int64_t k, ElemType storage, cudaStream_t stream) {
  return skinny_gemm_mma_rope_qkv(x, RowScales{}, w_paired, bias, out, rows, k, storage, stream);
}

bool skinny_gemm_mma_rope_qkv(const void* x, const RowScales& scales, const void* w_paired, const void* bias,
                              const RopeQkvOutputs& out, int64_t rows, int64_t k, ElemType storage,
                              cudaStream_t stream) {
  if (!can_pair_rows(qkv_features(out), out.head_dim)) return false;
  return run(x, w_paired, rows, qkv_features(out), k, scales, storage, stream, rope_qkv_output(bias, out));
}

}  // namespace drift::cuda
