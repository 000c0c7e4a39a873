// The experts of a mixture-of-experts MLP for prefill-sized batches, on tensor cores: for every
// expert e, y[entries of e] = x[their rows] W_e^T + b_e, the entries grouped by moe_group (order /
// offsets), as mxfp4_expert_gemv computes them for decode sizes (kernels/cuda/moe_experts.cu).
// MXFP4 weights stay 4-bit in memory: each k step's 32 inputs are one MXFP4 group, whose 16 bytes
// of codes and scale per output are decoded into bf16 / fp16 in shared memory (every MXFP4 value
// is exact in either) -- a tile at a time, never the expert. Dense experts (golden/gptoss-tiny)
// are staged as they are.
//
// Tiles: a block owns 64 entries of one expert x 128 outputs; its 8 warps are 2 (entries) x 4
// (outputs), each 32 x 32 of m16n8k16 MMAs. The grid's y runs over every expert's entry tiles
// (at most entries / 64 + experts of them; a block past the last finds none and returns), so the
// launch needs no count from the host and records into a graph. The next k step's x rows are
// copied with cp.async and its weights loaded into registers while the current one multiplies.
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/moe_weight_decode.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/smem_staging.cuh"

namespace drift::cuda {
namespace {

constexpr int kTileEntries = 64;
constexpr int kTileOutputs = 128;
constexpr int kStep = 32;          // inputs a k step: one MXFP4 group
constexpr int kStride = kStep + 8;  // shared row stride in elements: 80 bytes, ldmatrix conflict-free
constexpr int kThreads = 256;

// The (expert, entry tile) block y serves: expert e's tiles follow the experts before it.
__device__ __forceinline__ bool find_tile(const int32_t* offsets, int64_t experts, int64_t y, int64_t& expert,
                                          int64_t& first) {
  int64_t before = 0;
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t n = offsets[e + 1] - offsets[e], tiles = (n + kTileEntries - 1) / kTileEntries;
    if (y < before + tiles) {
      expert = e;
      first = offsets[e] + (y - before) * kTileEntries;
      return true;
    }
    before += tiles;
  }
  return false;
}

template <typename T, typename Rows>
__global__ void __launch_bounds__(kThreads)
    grouped_gemm_kernel(const T* x, int64_t in, int64_t out, int64_t experts, int64_t k, Rows weights, const T* bias,
                        const int32_t* order, const int32_t* offsets, float* y) {
  __shared__ __align__(16) T xs[2][kTileEntries * kStride];
  __shared__ __align__(16) T ws[2][kTileOutputs * kStride];
  int64_t e = 0, first = 0;
  if (!find_tile(offsets, experts, blockIdx.y, e, first)) return;
  const int64_t last = min(first + kTileEntries, static_cast<int64_t>(offsets[e + 1]));
  const int64_t o0 = static_cast<int64_t>(blockIdx.x) * kTileOutputs;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int wm = warp / 4, wn = warp % 4;
  const int64_t groups = in / kStep, steps = groups;

  // x: 64 rows x 64 bytes = 256 16-byte chunks, one a thread.
  const int x_row = tid / 4, x_chunk = tid % 4;
  const int64_t entry = first + x_row;
  const bool x_valid = entry < last;
  const T* x_src = x + (x_valid ? static_cast<int64_t>(order[entry]) / k : 0) * in + x_chunk * 8;
  auto stage_x = [&](int64_t step, int buf) {
    cp_async16(&xs[buf][x_row * kStride + x_chunk * 8], x_src + step * kStep, x_valid);
    cp_async_commit();
  };
  // Weights: 128 output rows, two threads a row, 16 values each.
  const int w_row = tid / 2, w_half = tid % 2;
  const int64_t w_out = o0 + w_row;
  const bool w_valid = w_out < out;
  const int64_t weight_row = e * out + (w_valid ? w_out : 0);
  auto load_w = [&](int64_t step) { return weights.half(weight_row, groups, step, w_half); };
  auto store_w = [&](const typename Rows::Half& h, int buf) {
    weights.template store<T>(h, w_valid, &ws[buf][w_row * kStride + w_half * 16]);
  };

  float acc[2][4][4] = {};
  stage_x(0, 0);
  store_w(load_w(0), 0);
  cp_async_wait<0>();
  __syncthreads();
  for (int64_t step = 0; step < steps; ++step) {
    const int buf = static_cast<int>(step & 1);
    typename Rows::Half next{};
    if (step + 1 < steps) {
      stage_x(step + 1, buf ^ 1);
      next = load_w(step + 1);
    }
#pragma unroll
    for (int ks = 0; ks < kStep / 16; ++ks) {
      uint32_t a[2][4], b[4][2];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
        ldmatrix_x4(a[mt], &xs[buf][(wm * 32 + mt * 16 + lane % 16) * kStride + ks * 16 + (lane / 16) * 8]);
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        uint32_t r[4];
        ldmatrix_x4(r, &ws[buf][(wn * 32 + np * 16 + lane % 8 + (lane / 16) * 8) * kStride + ks * 16 +
                                ((lane / 8) % 2) * 8]);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) mma<T>(acc[mt][nt], a[mt], b[nt][0], b[nt][1]);
    }
    if (step + 1 < steps) store_w(next, buf ^ 1);
    cp_async_wait<0>();
    __syncthreads();
  }
  // Fragment (mt, nt): rows lane / 4 and + 8, columns 2 (lane % 4) and + 1.
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t row = first + wm * 32 + mt * 16 + lane / 4 + half * 8;
      if (row >= last) continue;
      float* y_row = y + static_cast<int64_t>(order[row]) * out;
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int64_t o = o0 + wn * 32 + nt * 8 + 2 * (lane % 4) + c;
          if (o < out) y_row[o] = acc[mt][nt][half * 2 + c] + (bias ? to_float(bias[e * out + o]) : 0.0f);
        }
    }
}

template <typename Rows>
bool launch_grouped(const void* x, int64_t in, int64_t out, int64_t experts, int64_t k, int64_t entries, Rows weights,
                    const void* bias, const int32_t* order, const int32_t* offsets, float* y, ElemType storage,
                    cudaStream_t stream) {
  if (in < kStep || in % kStep != 0 || experts < 1 || out < 1 || k < 1 || entries < 1) return false;
  const dim3 grid(static_cast<unsigned>((out + kTileOutputs - 1) / kTileOutputs),
                  static_cast<unsigned>((entries + kTileEntries - 1) / kTileEntries + experts));
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    grouped_gemm_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), in, out, experts, k, weights,
                                                          static_cast<const T*>(bias), order, offsets, y);
  });
  return true;
}

}  // namespace

bool mxfp4_expert_gemm(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                       int64_t entries, const uint8_t* blocks, const uint8_t* scales, const void* bias,
                       const int32_t* order, const int32_t* offsets, float* y, ElemType storage, cudaStream_t stream) {
  return launch_grouped(x, in, out, experts, experts_per_token, entries, Mxfp4Halves{blocks, scales}, bias, order,
                        offsets, y, storage, stream);
}

bool dense_expert_gemm(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                       int64_t entries, const void* weights, const void* bias, const int32_t* order,
                       const int32_t* offsets, float* y, ElemType storage, cudaStream_t stream) {
  bool launched = false;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launched = launch_grouped(x, in, out, experts, experts_per_token, entries,
                              DenseHalves<T>{static_cast<const T*>(weights)}, bias, order, offsets, y, storage,
                              stream);
  });
  return launched;
}

}  // namespace drift::cuda
