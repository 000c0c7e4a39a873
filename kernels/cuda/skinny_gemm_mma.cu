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

#include "kernels/cuda/device_info.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kFeatures = 16;
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

template <typename T, int NT, int UNROLL, int BLOCKS_PER_SM>
__global__ void __launch_bounds__(kWarps * 32, BLOCKS_PER_SM)
    skinny_mma_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, void* y,
                      ElemType y_type, int rows, int n, int k) {
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

  // Partials of the 8 warps, added in warp order.
  __shared__ float partial[kWarps][NT][4][32];
#pragma unroll
  for (int t = 0; t < NT; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[warp][t][i][lane] = acc[t][i];
  __syncthreads();
  for (int idx = threadIdx.x; idx < NT * 4 * 32; idx += kWarps * 32) {
    const int t = idx / 128, i = (idx / 32) % 4, l = idx % 32;
    float sum = 0.0f;
    for (int v = 0; v < kWarps; ++v) sum += partial[v][t][i][l];
    // c0, c1: feature g, rows 2q, 2q + 1; c2, c3: feature g + 8.
    const int feature = f0 + l / 4 + (i >= 2 ? 8 : 0);
    const int row = t * 8 + 2 * (l % 4) + (i % 2);
    if (feature >= n || row >= rows) continue;
    if (bias) sum += to_float(bias[feature]);
    store_float(y, y_type, static_cast<int64_t>(row) * n + feature, sum);
  }
}

template <int NT>
void launch(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows, int64_t n,
            int64_t k, ElemType storage, cudaStream_t stream) {
  const unsigned blocks = grid_for(n, kFeatures);
  const int64_t sms = multiprocessors();
  const bool wide = blocks > kBlocksPerSm * sms && blocks <= kWideBlocksPerSm * sms;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto kernel = skinny_mma_kernel<T, NT, kUnroll<NT>, kBlocksPerSm>;
    if constexpr (NT == 1)  // more rows' x fragments leave no registers for a third block
      if (wide) kernel = skinny_mma_kernel<T, NT, kWideUnroll, kWideBlocksPerSm>;
    kernel<<<blocks, kWarps * 32, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                               static_cast<const T*>(bias), y, y_type, static_cast<int>(rows),
                                               static_cast<int>(n), static_cast<int>(k));
  });
}

}  // namespace

bool skinny_gemm_mma(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows,
                     int64_t n, int64_t k, ElemType storage, cudaStream_t stream) {
  if (k % 8 != 0 || rows < 1 || rows > kSkinnyMaxRows) return false;
  if (rows <= 8) launch<1>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (rows <= 16) launch<2>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (rows <= 24) launch<3>(x, w, bias, y, y_type, rows, n, k, storage, stream);  // a 16-node tree's forward
  else launch<4>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  return true;
}

}  // namespace drift::cuda
