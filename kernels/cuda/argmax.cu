// Row-wise argmax over fp32 logits with CUB's block reduction (lowest index wins ties, as the
// CPU sampler's greedy path).
#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kThreads = 512;

struct Best {
  float value;
  int32_t index;
};

// The host sampler's greedy pick is std::max_element: the largest value, the lowest index among
// equal ones, and a NaN wins only at index 0 (nothing compares above it there; a later NaN never
// compares above anything). As a rank: NaN at 0, then the values, then NaN elsewhere, which
// makes BetterOf a total order, so any reduction order gives the same pick.
__device__ __forceinline__ int rank_of(const Best& b) { return isnan(b.value) ? (b.index == 0 ? 2 : 0) : 1; }

struct BetterOf {
  __device__ Best operator()(const Best& a, const Best& b) const {
    const int ra = rank_of(a), rb = rank_of(b);
    if (ra != rb) return ra > rb ? a : b;
    if (ra == 1 && a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

// Any reduction order gives the same pick (BetterOf is a total order), so the row is read in
// 16-byte vectors, kUnroll of them in flight per thread: a 128K vocabulary is a few trips to
// memory instead of one per element.
constexpr int kUnroll = 8;

__global__ void argmax_kernel(const float* logits, int64_t vocab, int32_t* out) {
  using Reduce = cub::BlockReduce<Best, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const float* row = logits + blockIdx.x * vocab;
  Best best{-INFINITY, 0x7fffffff};
  const bool vectors = vocab % 4 == 0;  // then every row starts 16-byte aligned
  const int64_t vector_end = vectors ? vocab / 4 : 0;
  const float4* row4 = reinterpret_cast<const float4*>(row);
  for (int64_t v0 = threadIdx.x; v0 < vector_end; v0 += kThreads * kUnroll) {
    float4 chunk[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t v = v0 + u * kThreads;
      chunk[u] = v < vector_end ? row4[v] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const auto i = static_cast<int32_t>(4 * (v0 + u * kThreads));
      if (v0 + u * kThreads >= vector_end) break;
      best = BetterOf{}(best, Best{chunk[u].x, i});
      best = BetterOf{}(best, Best{chunk[u].y, i + 1});
      best = BetterOf{}(best, Best{chunk[u].z, i + 2});
      best = BetterOf{}(best, Best{chunk[u].w, i + 3});
    }
  }
  for (int64_t i = 4 * vector_end + threadIdx.x; i < vocab; i += kThreads)
    best = BetterOf{}(best, Best{row[i], static_cast<int32_t>(i)});
  const Best total = Reduce(storage).Reduce(best, BetterOf{});
  if (threadIdx.x == 0) out[blockIdx.x] = total.index == 0x7fffffff ? 0 : total.index;
}

}  // namespace

void argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* out, cudaStream_t stream) {
  if (rows == 0) return;
  argmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, vocab, out);
}

}  // namespace drift::cuda
