// RMSNorm, alone and fused with the residual add that precedes it in every pre-norm block.
// One block per row (a cluster of blocks for the fused add, below); the sum of squares is reduced
// in fp32 in a fixed order (per row, so independent of the batch).
#include <cooperative_groups.h>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

// Wide blocks: a decode step normalises one row, so the row's loads must all be in flight at once.
constexpr int kThreads = 512;

// The block's sum of v, in a fixed order (a warp's shuffle tree, then the warps in order).
template <int THREADS = kThreads>
__device__ float block_sum(float v) {
  __shared__ float partial[THREADS / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < THREADS / 32; ++w) total += partial[w];
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

// The residual add and RMSNorm of one row spread over a cluster of kClusterBlocks blocks (one per
// SM): a decode step has one row, and one SM moving the row's residual, delta, weight and output
// (56 KB at hidden 4096) was most of the single-block kernel's time (3.6 -> 3.0 us a call on the
// H100, two calls a layer). Each block adds and squares a contiguous slice; the slices' sums meet
// in distributed shared memory, read in rank order, so the total is the same bits every time and
// for every row count; each block then scales its own slice.
constexpr int kClusterBlocks = 8, kClusterThreads = 128;
// A thread's elements: steps of 4 consecutive ones (one 16-byte residual load), at most
// kClusterSteps of them: slices of up to 1024 elements, rows of up to 8192.
constexpr int kClusterVec = 4, kClusterSteps = 2;

// Clusters need sm_90: a build that also targets an older architecture (-DCMAKE_CUDA_ARCHITECTURES)
// keeps the one-block kernel everywhere (its PTX could be JIT-compiled for a newer GPU).
constexpr bool built_for_clusters() {
#ifdef __CUDA_ARCH_LIST__
  constexpr int archs[] = {__CUDA_ARCH_LIST__};
  for (int arch : archs)
    if (arch < 900) return false;
  return true;
#else
  return false;
#endif
}

bool cluster_norm_fits(int64_t dim) {
  return built_for_clusters() && dim % (kClusterVec * kClusterBlocks) == 0 &&
         dim / kClusterBlocks <= kClusterVec * kClusterSteps * kClusterThreads;
}

template <typename T>
__global__ void __launch_bounds__(kClusterThreads)
    add_rms_norm_cluster_kernel(float* __restrict__ residual, const T* __restrict__ delta,
                                const T* __restrict__ weight, float eps, int64_t dim, T* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  using P = typename Pair<T>::type;
  cg::cluster_group cluster = cg::this_cluster();
  __shared__ float slice_sum;
  const int64_t row = blockIdx.x / kClusterBlocks, vecs = dim / (kClusterVec * kClusterBlocks);
  const int64_t slice = static_cast<int64_t>(cluster.block_rank()) * vecs * kClusterVec;  // within the row
  float v[kClusterSteps][kClusterVec], w[kClusterSteps][kClusterVec];
  // The weight first (it is no output of the previous kernel), then the row.
#pragma unroll
  for (int j = 0; j < kClusterSteps; ++j) {
    const int64_t i = slice + (threadIdx.x + j * kClusterThreads) * kClusterVec;
    if (threadIdx.x + j * kClusterThreads >= vecs) continue;
    const P* wp = reinterpret_cast<const P*>(weight + i);
    const float2 w0 = to_float2(wp[0]), w1 = to_float2(wp[1]);
    w[j][0] = w0.x, w[j][1] = w0.y, w[j][2] = w1.x, w[j][3] = w1.y;
  }
  float sq = 0.0f;
#pragma unroll
  for (int j = 0; j < kClusterSteps; ++j) {
    const int64_t i = row * dim + slice + (threadIdx.x + j * kClusterThreads) * kClusterVec;
    if (threadIdx.x + j * kClusterThreads >= vecs) continue;
    const float4 r = *reinterpret_cast<const float4*>(residual + i);
    const P* dp = reinterpret_cast<const P*>(delta + i);
    const float2 d0 = to_float2(dp[0]), d1 = to_float2(dp[1]);
    v[j][0] = r.x + d0.x, v[j][1] = r.y + d0.y, v[j][2] = r.z + d1.x, v[j][3] = r.w + d1.y;
    *reinterpret_cast<float4*>(residual + i) = make_float4(v[j][0], v[j][1], v[j][2], v[j][3]);
#pragma unroll
    for (int e = 0; e < kClusterVec; ++e) sq = fmaf(v[j][e], v[j][e], sq);
  }
  const float slice_total = block_sum<kClusterThreads>(sq);
  if (threadIdx.x == 0) slice_sum = slice_total;
  cluster.sync();
  float total = 0.0f;
  for (unsigned r = 0; r < kClusterBlocks; ++r) total += *cluster.map_shared_rank(&slice_sum, r);
  const float inv = rsqrtf(total / static_cast<float>(dim) + eps);
#pragma unroll
  for (int j = 0; j < kClusterSteps; ++j) {
    const int64_t i = row * dim + slice + (threadIdx.x + j * kClusterThreads) * kClusterVec;
    if (threadIdx.x + j * kClusterThreads >= vecs) continue;
    P* o = reinterpret_cast<P*>(out + i);
    o[0] = pack_pair<T>(v[j][0] * inv * w[j][0], v[j][1] * inv * w[j][1]);
    o[1] = pack_pair<T>(v[j][2] * inv * w[j][2], v[j][3] * inv * w[j][3]);
  }
  cluster.sync();  // no block leaves while another still reads its sum
#else
  __trap();  // never launched: see built_for_clusters()
#endif
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
  if (cluster_norm_fits(dim)) {
    dispatch_storage(storage, [&](auto tag) {
      using T = typename decltype(tag)::type;
      cudaLaunchAttribute cluster{};
      cluster.id = cudaLaunchAttributeClusterDimension;
      cluster.val.clusterDim.x = kClusterBlocks;
      cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(static_cast<unsigned>(rows * kClusterBlocks));
      config.blockDim = dim3(kClusterThreads);
      config.stream = stream;
      config.attrs = &cluster;
      config.numAttrs = 1;
      cudaLaunchKernelEx(&config, add_rms_norm_cluster_kernel<T>, residual, static_cast<const T*>(delta),
                         static_cast<const T*>(weight), eps, dim, static_cast<T*>(out));
    });
    return;
  }
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_rms_norm_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        residual, static_cast<const T*>(delta), static_cast<const T*>(weight), eps, dim, static_cast<T*>(out));
  });
}

}  // namespace drift::cuda
