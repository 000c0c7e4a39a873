// Row-wise descending sort of fp32 rows in the CPU's order (ties by lowest index, NaN last, -0 ==
// +0), as the sampler and top_k need it: floats become order-preserving unsigned keys and CUB's
// stable segmented sort orders them, so equal keys keep their ascending column order.
#include <cub/device/device_segmented_sort.cuh>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t ordered_key(float v) {
  if (isnan(v)) return 0u;  // below every number, -inf included (whose key is 0x007fffff)
  uint32_t bits = __float_as_uint(v);
  if (v == 0.0f) bits = 0u;  // -0 and +0 compare equal on the host
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__global__ void make_keys(const float* x, int64_t n, int64_t cols, uint32_t* keys, int32_t* columns) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    keys[i] = ordered_key(x[i]);
    columns[i] = static_cast<int32_t>(i % cols);
  }
}

__global__ void make_offsets(int64_t rows, int64_t cols, int* offsets) {
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r <= rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    offsets[r] = static_cast<int>(r * cols);
}

__global__ void take_kernel(const float* x, const int32_t* order, int64_t cols, int64_t k, float* values,
                            int32_t* indices) {
  const int64_t r = blockIdx.x;
  for (int64_t j = threadIdx.x; j < k; j += blockDim.x) {
    const int32_t c = order[r * cols + j];
    if (values) values[r * k + j] = x[r * cols + c];
    if (indices) indices[r * k + j] = c;
  }
}

size_t align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

// The workspace: keys in / out, columns in, segment offsets, then CUB's temporary storage.
struct SortLayout {
  size_t keys = 0, columns = 0, offsets = 0, cub = 0;
  size_t total() const { return 2 * keys + columns + offsets + cub; }
};

SortLayout layout_for(int64_t rows, int64_t cols) {
  SortLayout l;
  const int64_t n = rows * cols;
  l.keys = align256(n * sizeof(uint32_t));
  l.columns = align256(n * sizeof(int32_t));
  l.offsets = align256((rows + 1) * sizeof(int));
  size_t cub_bytes = 0;
  cub::DeviceSegmentedSort::StableSortPairsDescending(
      nullptr, cub_bytes, static_cast<const uint32_t*>(nullptr), static_cast<uint32_t*>(nullptr),
      static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr), static_cast<int>(n), static_cast<int>(rows),
      static_cast<const int*>(nullptr), static_cast<const int*>(nullptr));
  l.cub = align256(cub_bytes);
  return l;
}

}  // namespace

size_t row_sort_workspace_bytes(int64_t rows, int64_t cols) { return layout_for(rows, cols).total(); }

bool sort_rows_descending(const float* x, int64_t rows, int64_t cols, int32_t* order, void* workspace,
                          size_t workspace_bytes, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return true;
  if (rows * cols > INT32_MAX) return false;
  const SortLayout l = layout_for(rows, cols);
  if (workspace_bytes < l.total()) return false;
  char* w = static_cast<char*>(workspace);
  auto* keys_in = reinterpret_cast<uint32_t*>(w);
  auto* keys_out = reinterpret_cast<uint32_t*>(w + l.keys);
  auto* columns = reinterpret_cast<int32_t*>(w + 2 * l.keys);
  auto* offsets = reinterpret_cast<int*>(w + 2 * l.keys + l.columns);
  void* cub_storage = w + 2 * l.keys + l.columns + l.offsets;
  const int64_t n = rows * cols;
  make_keys<<<std::min<unsigned>(grid_for(n, kThreads), 4096), kThreads, 0, stream>>>(x, n, cols, keys_in, columns);
  make_offsets<<<grid_for(rows + 1, kThreads), kThreads, 0, stream>>>(rows, cols, offsets);
  size_t cub_bytes = l.cub;
  return cub::DeviceSegmentedSort::StableSortPairsDescending(cub_storage, cub_bytes, keys_in, keys_out, columns, order,
                                                             static_cast<int>(n), static_cast<int>(rows), offsets,
                                                             offsets + 1, stream) == cudaSuccess;
}

void take_sorted(const float* x, const int32_t* order, int64_t rows, int64_t cols, int64_t k, float* values,
                 int32_t* indices, cudaStream_t stream) {
  if (rows <= 0 || k <= 0) return;
  take_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, order, cols, k, values, indices);
}

}  // namespace drift::cuda
