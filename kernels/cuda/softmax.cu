// Row softmax at a temperature (the plugin compute service), fp32 math: one block per row finds
// the row's maximum, sums exp((x - max) / T) and scales.
#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kThreads = 256;
using Reduce = cub::BlockReduce<float, kThreads>;
struct Larger {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

__global__ void softmax_kernel(const void* x, ElemType x_type, float inv_temperature, int64_t cols, void* out,
                               ElemType out_type) {
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float broadcast;
  const int64_t base = blockIdx.x * cols;
  float local_max = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads)
    local_max = fmaxf(local_max, load_as_float(x, x_type, base + c) * inv_temperature);
  const float row_max = Reduce(storage).Reduce(local_max, Larger{});
  if (threadIdx.x == 0) broadcast = row_max;
  __syncthreads();
  const float max_v = broadcast;
  __syncthreads();
  float local_sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads)
    local_sum += expf(load_as_float(x, x_type, base + c) * inv_temperature - max_v);
  const float sum = Reduce(storage).Sum(local_sum);
  if (threadIdx.x == 0) broadcast = 1.0f / sum;
  __syncthreads();
  const float inv = broadcast;
  // Reads of x finished above, so out may be x.
  for (int64_t c = threadIdx.x; c < cols; c += kThreads)
    store_float(out, out_type, base + c, expf(load_as_float(x, x_type, base + c) * inv_temperature - max_v) * inv);
}

}  // namespace

void softmax_rows(const void* x, ElemType x_type, float temperature, int64_t rows, int64_t cols, void* out,
                  ElemType out_type, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, x_type, 1.0f / temperature, cols, out,
                                                                       out_type);
}

}  // namespace drift::cuda
