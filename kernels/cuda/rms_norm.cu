// RMSNorm, alone and fused with the residual add that precedes it in every pre-norm block.
// One block per row; the sum of squares is reduced in fp32 in a fixed order (per row, so
// independent of the batch).
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

// Wide blocks: a decode step normalises one row, so the row's loads must all be in flight at once.
constexpr int kThreads = 512;

__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  __syncthreads();  // partial is reused by the next call
  return total;
}

// A row of up to kCached * kThreads elements stays in registers between the sum of squares and
// the scaling: every load of the row is issued at once (a decode step's single row would
// otherwise wait on memory once per loop trip). Longer rows take the loop that reloads.
constexpr int kCached = 16;

template <typename T>
__global__ void rms_norm_kernel(const void* x, ElemType x_type, const T* weight, float eps,
                                int64_t dim, void* out, ElemType out_type) {
  const int64_t base = blockIdx.x * dim;
  float v[kCached];
  const bool cached = dim <= kCached * kThreads;
  float sq = 0.0f;
  float w[kCached];  // loaded with the row: the scaling then waits on no second trip to memory
  if (cached) {
#pragma unroll
    for (int j = 0; j < kCached; ++j) {
      const int64_t i = threadIdx.x + j * kThreads;
      v[j] = i < dim ? load_as_float(x, x_type, base + i) : 0.0f;
      w[j] = i < dim ? to_float(weight[i]) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kCached; ++j) sq = fmaf(v[j], v[j], sq);
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
      const float e = load_as_float(x, x_type, base + i);
      sq = fmaf(e, e, sq);
    }
  }
  const float inv = rsqrtf(block_sum(sq) / static_cast<float>(dim) + eps);
  if (cached) {
#pragma unroll
    for (int j = 0; j < kCached; ++j) {
      const int64_t i = threadIdx.x + j * kThreads;
      if (i < dim) store_float(out, out_type, base + i, v[j] * inv * w[j]);
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < dim; i += kThreads)
    store_float(out, out_type, base + i, load_as_float(x, x_type, base + i) * inv * to_float(weight[i]));
}

template <typename T>
__global__ void add_rms_norm_kernel(float* __restrict__ residual, const T* __restrict__ delta,
                                    const T* __restrict__ weight, float eps, int64_t dim, T* __restrict__ out) {
  const int64_t base = blockIdx.x * dim;
  float v[kCached], w[kCached];
  const bool cached = dim <= kCached * kThreads;
  float sq = 0.0f;
  if (cached) {
    // Every load of the row and of the weight goes out at once: one trip to memory, not two.
#pragma unroll
    for (int j = 0; j < kCached; ++j) {
      const int64_t i = threadIdx.x + j * kThreads;
      v[j] = i < dim ? residual[base + i] + to_float(delta[base + i]) : 0.0f;
      w[j] = i < dim ? to_float(__ldg(weight + i)) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kCached; ++j) {
      const int64_t i = threadIdx.x + j * kThreads;
      if (i < dim) residual[base + i] = v[j];
      sq = fmaf(v[j], v[j], sq);
    }
  } else {
    for (int64_t i = threadIdx.x; i < dim; i += kThreads) {
      const float e = residual[base + i] + to_float(delta[base + i]);
      residual[base + i] = e;
      sq = fmaf(e, e, sq);
    }
  }
  const float inv = rsqrtf(block_sum(sq) / static_cast<float>(dim) + eps);
  if (cached) {
#pragma unroll
    for (int j = 0; j < kCached; ++j) {
      const int64_t i = threadIdx.x + j * kThreads;
      if (i < dim) out[base + i] = from_float<T>(v[j] * inv * w[j]);
    }
    return;
  }
  for (int64_t i = threadIdx.x; i < dim; i += kThreads)
    out[base + i] = from_float<T>(residual[base + i] * inv * to_float(weight[i]));
}

}  // namespace

void rms_norm(const void* x, ElemType x_type, const void* weight, float eps, int64_t rows, int64_t dim, void* out,
              ElemType out_type, ElemType storage, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    rms_norm_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, x_type, static_cast<const T*>(weight),
                                                                             eps, dim, out, out_type);
  });
}

void add_rms_norm(float* residual, const void* delta, const void* weight, float eps, int64_t rows, int64_t dim,
                  void* out, ElemType storage, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_rms_norm_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        residual, static_cast<const T*>(delta), static_cast<const T*>(weight), eps, dim, static_cast<T*>(out));
  });
}

}  // namespace drift::cuda
