// Query-aware page scores (SpecPV / Quest block selection): out[h, p] = the mean, over the query
// rows and kv head h's group of query heads, of max(q . kmax[p, h], q . kmin[p, h]), fp32 math.
//
// One block per (tile of 64 pages, kv head), a small GEMM on the CUDA cores: the group's query
// vectors (row r, head h * G + g, in that order) in chunks of 64 and the tile's summaries are
// staged in shared memory as fp32, 32 dimensions at a time, dimension-major (the next slice is
// loaded into registers while the current one is multiplied); each thread keeps the dot products
// of 4 query vectors x 4 pages against both summaries in registers. Sums run in a fixed order
// (each thread over its query vectors in order, then the 16 threads' partial sums of a page in
// order), so a score never depends on timing. On an H200, 64 rows of 32 heads x 128 dims over
// 4096 pages x 8 kv heads take about 145 us (15 TFMA/s; shared-memory reads are the limit).
#include <cstdint>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kThreads = 256;  // 8 warps
constexpr int kPageTile = 64;  // pages per block
constexpr int kVecTile = 64;   // query vectors per chunk
constexpr int kDimSlice = 32;  // dimensions staged at once
constexpr int kVecsPerThread = 4;
constexpr int kPagesPerThread = 4;
constexpr int kPageGroups = kPageTile / kPagesPerThread;  // threads across a tile's pages
constexpr int kVecGroups = kVecTile / kVecsPerThread;     // threads across a chunk's vectors
static_assert(kPageGroups * kVecGroups == kThreads, "one thread per (vector group, page group)");
// Staging: a warp moves 4 rows (vectors or pages) x 8 dimensions at a time (lane: row lane % 4,
// dimension lane / 4), so its global reads are 16- or 32-byte runs and its shared stores hit 32
// distinct banks; a thread stages 8 of them per slice, in 2 rows.
constexpr int kStaged = kVecTile * kDimSlice / kThreads;
static_assert(kVecTile == kPageTile && kStaged == 8 && kThreads == 256, "the staging map below");
__device__ __forceinline__ int staged_row(int warp, int lane, int k) { return (warp + 8 * (k & 1)) * 4 + (lane & 3); }
__device__ __forceinline__ int staged_dim(int lane, int k) { return (k >> 1) * 8 + (lane >> 2); }

__device__ __forceinline__ float load_float(const float* p, int64_t i) { return p[i]; }
template <typename T>
__device__ __forceinline__ float load_float(const T* p, int64_t i) {
  return to_float(p[i]);
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 2)
    page_scores_kernel(const T* q, const float* kmax, const float* kmin, int rows, int num_heads, int num_kv_heads,
                       int head_dim, int64_t num_pages, float* out) {
  // Rows padded by 4: float4 reads stay aligned and the staging stores spread over the banks.
  __shared__ __align__(16) float qs[kDimSlice][kVecTile + 4];
  __shared__ __align__(16) float his[kDimSlice][kPageTile + 4];
  __shared__ __align__(16) float los[kDimSlice][kPageTile + 4];
  __shared__ float partial[kVecGroups][kPageTile];

  const int h = blockIdx.y;
  const int64_t page0 = static_cast<int64_t>(blockIdx.x) * kPageTile;
  const int pages = num_pages - page0 < kPageTile ? static_cast<int>(num_pages - page0) : kPageTile;
  const int group = num_heads / num_kv_heads;
  const int vectors = rows * group;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int pg = tid % kPageGroups, vg = tid / kPageGroups;  // computes pages pg*4.., vectors vg*4.. of a chunk

  // The two pages this thread stages (offsets from the tile's first summary row; -1: past the end).
  const int page_stride = num_kv_heads * head_dim;
  const float* hi_base = kmax + (page0 * num_kv_heads + h) * head_dim;
  const float* lo_base = kmin + (page0 * num_kv_heads + h) * head_dim;
  int page_off[2];
  for (int k = 0; k < 2; ++k) {
    const int p = staged_row(warp, lane, k);
    page_off[k] = p < pages ? p * page_stride : -1;
  }

  float sum[kPagesPerThread] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int v0 = 0; v0 < vectors; v0 += kVecTile) {
    const int chunk = vectors - v0 < kVecTile ? vectors - v0 : kVecTile;
    // The two query vectors this thread stages in this chunk (offsets into q; -1: past the end).
    int q_off[2];
    for (int k = 0; k < 2; ++k) {
      const int v = staged_row(warp, lane, k), vec = v0 + v;
      q_off[k] = v < chunk ? ((vec / group) * num_heads + h * group + vec % group) * head_dim : -1;
    }
    float qn[kStaged], an[kStaged], bn[kStaged];  // the next slice, in flight
    auto fetch = [&](int d0) {
#pragma unroll
      for (int k = 0; k < kStaged; ++k) {
        const int d = d0 + staged_dim(lane, k);
        const bool in_dim = d < head_dim;
        qn[k] = in_dim && q_off[k & 1] >= 0 ? load_float(q, q_off[k & 1] + d) : 0.0f;
        const bool in_page = in_dim && page_off[k & 1] >= 0;
        an[k] = in_page ? hi_base[page_off[k & 1] + d] : 0.0f;
        bn[k] = in_page ? lo_base[page_off[k & 1] + d] : 0.0f;
      }
    };
    const bool active = vg * kVecsPerThread < chunk;  // uniform over each half warp
    float hi[kVecsPerThread][kPagesPerThread] = {}, lo[kVecsPerThread][kPagesPerThread] = {};
    fetch(0);
    for (int d0 = 0; d0 < head_dim; d0 += kDimSlice) {
      __syncthreads();  // the previous slice is consumed
#pragma unroll
      for (int k = 0; k < kStaged; ++k) {
        const int r = staged_row(warp, lane, k), d = staged_dim(lane, k);
        qs[d][r] = qn[k];
        his[d][r] = an[k];
        los[d][r] = bn[k];
      }
      __syncthreads();
      if (d0 + kDimSlice < head_dim) fetch(d0 + kDimSlice);
      if (active) {
#pragma unroll 8
        for (int d = 0; d < kDimSlice; ++d) {
          const float4 qv = *reinterpret_cast<const float4*>(&qs[d][vg * kVecsPerThread]);
          const float4 av = *reinterpret_cast<const float4*>(&his[d][pg * kPagesPerThread]);
          const float4 bv = *reinterpret_cast<const float4*>(&los[d][pg * kPagesPerThread]);
          const float qr[kVecsPerThread] = {qv.x, qv.y, qv.z, qv.w};
          const float ar[kPagesPerThread] = {av.x, av.y, av.z, av.w};
          const float br[kPagesPerThread] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
          for (int i = 0; i < kVecsPerThread; ++i)
#pragma unroll
            for (int j = 0; j < kPagesPerThread; ++j) {
              hi[i][j] = fmaf(qr[i], ar[j], hi[i][j]);
              lo[i][j] = fmaf(qr[i], br[j], lo[i][j]);
            }
        }
      }
    }
    if (active) {
#pragma unroll
      for (int i = 0; i < kVecsPerThread; ++i)
        if (vg * kVecsPerThread + i < chunk)
#pragma unroll
          for (int j = 0; j < kPagesPerThread; ++j) sum[j] += fmaxf(hi[i][j], lo[i][j]);
    }
  }
#pragma unroll
  for (int j = 0; j < kPagesPerThread; ++j) partial[vg][pg * kPagesPerThread + j] = sum[j];
  __syncthreads();
  if (tid < pages) {
    float total = 0.0f;
    for (int g = 0; g < kVecGroups; ++g) total += partial[g][tid];
    out[h * num_pages + page0 + tid] = total / static_cast<float>(vectors);
  }
}

template <typename T>
void launch(const void* q, const float* kmax, const float* kmin, int64_t rows, int64_t num_heads, int64_t num_kv_heads,
            int64_t head_dim, int64_t num_pages, float* out, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((num_pages + kPageTile - 1) / kPageTile), static_cast<unsigned>(num_kv_heads));
  page_scores_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(q), kmax, kmin, static_cast<int>(rows),
                                                       static_cast<int>(num_heads), static_cast<int>(num_kv_heads),
                                                       static_cast<int>(head_dim), num_pages, out);
}

}  // namespace

bool page_scores(const void* q, ElemType q_type, const float* kmax, const float* kmin, int64_t rows, int64_t num_heads,
                 int64_t num_kv_heads, int64_t head_dim, int64_t num_pages, float* out, cudaStream_t stream) {
  if (rows <= 0 || num_kv_heads <= 0 || num_pages <= 0) return true;
  // Offsets within q and within a tile of summaries are 32-bit; kv heads index the grid's y.
  if (num_heads % num_kv_heads != 0 || rows * num_heads * head_dim > INT32_MAX ||
      kPageTile * num_kv_heads * head_dim > INT32_MAX || num_kv_heads > 65535)
    return false;
  if (q_type == ElemType::F32)
    launch<float>(q, kmax, kmin, rows, num_heads, num_kv_heads, head_dim, num_pages, out, stream);
  else
    dispatch_storage(q_type, [&](auto tag) {
      launch<typename decltype(tag)::type>(q, kmax, kmin, rows, num_heads, num_kv_heads, head_dim, num_pages, out,
                                           stream);
    });
  return true;
}

}  // namespace drift::cuda
