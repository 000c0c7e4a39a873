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

struct BetterOf {
  __device__ Best operator()(const Best& a, const Best& b) const {
    if (a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

__global__ void argmax_kernel(const float* logits, int64_t vocab, int32_t* out) {
  using Reduce = cub::BlockReduce<Best, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const float* row = logits + blockIdx.x * vocab;
  Best best{-INFINITY, 0x7fffffff};
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) best = BetterOf{}(best, Best{row[i], static_cast<int32_t>(i)});
  const Best total = Reduce(storage).Reduce(best, BetterOf{});
  if (threadIdx.x == 0) out[blockIdx.x] = total.index == 0x7fffffff ? 0 : total.index;
}

}  // namespace

void argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* out, cudaStream_t stream) {
  if (rows == 0) return;
  argmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, vocab, out);
}

}  // namespace drift::cuda
