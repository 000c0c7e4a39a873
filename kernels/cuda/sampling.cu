// Token sampling on the device, the CPU sampler's algorithm (core/sampler.cpp) step for step over
// the row's logits sorted by sort_rows_descending: top-k cut, softmax at the temperature in
// double, top-p (smallest prefix reaching top_p), min-p (drop the tail below min_p * max), then
// the seeded uniform draw scaled by the kept mass and the first token whose cumulative mass
// exceeds it. Sums are reduced in parallel, so a value can differ from the host's sequential sum
// in its last bits: a pick can only differ when the draw lands within ~1e-16 of a boundary.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kThreads = 512;
using Reduce = cub::BlockReduce<double, kThreads>;
using ReduceInt = cub::BlockReduce<int64_t, kThreads>;
using Scan = cub::BlockScan<double, kThreads>;

struct Shared {
  union {
    typename Reduce::TempStorage reduce;
    typename ReduceInt::TempStorage reduce_int;
    typename Scan::TempStorage scan;
  } storage;
  double value;
  int64_t index;
};

struct RowView {
  const float* logits;
  const int32_t* order;
  double max_logit;
  double temperature;
  double sum = 1.0;  // of the unnormalised weights over the top-k candidates
  __device__ double weight(int64_t i) const {
    return exp((static_cast<double>(logits[order[i]]) - max_logit) / temperature);
  }
  __device__ double prob(int64_t i) const { return weight(i) / sum; }
};

__device__ __forceinline__ int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }
struct Smaller {
  __device__ int64_t operator()(int64_t a, int64_t b) const { return smaller(a, b); }
};

// Each thread owns one contiguous range of [0, n), so prefix sums walk in order.
__device__ void my_range(int64_t n, int64_t& begin, int64_t& end) {
  const int64_t per = (n + kThreads - 1) / kThreads;
  begin = smaller(n, threadIdx.x * per);
  end = smaller(n, begin + per);
}

__device__ double block_sum(Shared& sh, double v) {
  const double total = Reduce(sh.storage.reduce).Sum(v);
  if (threadIdx.x == 0) sh.value = total;
  __syncthreads();
  const double out = sh.value;
  __syncthreads();
  return out;
}

__device__ int64_t block_min(Shared& sh, int64_t v) {
  const int64_t m = ReduceInt(sh.storage.reduce_int).Reduce(v, Smaller{});
  if (threadIdx.x == 0) sh.index = m;
  __syncthreads();
  const int64_t out = sh.index;
  __syncthreads();
  return out;
}

// The first i in [0, n) whose inclusive prefix sum of prob() satisfies `reached` (n when none).
template <typename Reached>
__device__ int64_t first_prefix(Shared& sh, const RowView& row, int64_t n, Reached reached) {
  int64_t begin, end;
  my_range(n, begin, end);
  double local = 0.0;
  for (int64_t i = begin; i < end; ++i) local += row.prob(i);
  double before = 0.0;
  Scan(sh.storage.scan).ExclusiveSum(local, before);
  __syncthreads();
  int64_t found = n;
  double cumulative = before;
  for (int64_t i = begin; i < end; ++i) {
    cumulative += row.prob(i);
    if (reached(cumulative)) {
      found = i;
      break;
    }
  }
  return block_min(sh, found);
}

__global__ void sample_kernel(const float* logits, const int32_t* order, int64_t vocab, const SampleRowParams* params,
                              int32_t* out) {
  __shared__ Shared sh;
  const int64_t r = blockIdx.x;
  const SampleRowParams p = params[r];
  if (!(p.temperature > 0.0)) return;  // greedy rows are argmax_rows' output
  RowView row{logits + r * vocab, order + r * vocab, 0.0, p.temperature};
  row.max_logit = static_cast<double>(row.logits[row.order[0]]);
  int64_t keep = p.top_k > 0 ? smaller(p.top_k, vocab) : vocab;

  int64_t begin, end;
  my_range(keep, begin, end);
  double local = 0.0;
  for (int64_t i = begin; i < end; ++i) local += row.weight(i);
  row.sum = block_sum(sh, local);

  if (p.top_p < 1.0) {
    const int64_t at = first_prefix(sh, row, keep, [&](double c) { return c >= p.top_p; });
    if (at < keep) keep = at + 1;
  }
  if (p.min_p > 0.0) {  // probabilities fall with i: the kept ones are a prefix
    const double floor = p.min_p * row.prob(0);
    my_range(keep, begin, end);
    int64_t first_below = keep;
    for (int64_t i = begin; i < end; ++i)
      if (row.prob(i) < floor) {
        first_below = i;
        break;
      }
    keep = block_min(sh, first_below);
    if (keep < 1) keep = 1;
  }
  my_range(keep, begin, end);
  local = 0.0;
  for (int64_t i = begin; i < end; ++i) local += row.prob(i);
  const double target = p.uniform * block_sum(sh, local);
  const int64_t at = first_prefix(sh, row, keep, [&](double c) { return target < c; });
  if (threadIdx.x == 0) out[r] = row.order[at < keep ? at : keep - 1];
}

}  // namespace

void sample_sorted_rows(const float* logits, const int32_t* order, int64_t rows, int64_t vocab,
                        const SampleRowParams* params, int32_t* out, cudaStream_t stream) {
  if (rows <= 0) return;
  sample_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, order, vocab, params, out);
}

}  // namespace drift::cuda
