// Elementwise and data-movement kernels: embedding, dtype conversion, SwiGLU, residual add,
// column splits and row gathers. All are memory-bound one-pass kernels.
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/paired_rows.cuh"
#include "kernels/cuda/pointwise_math.cuh"

namespace drift::cuda {
namespace {

constexpr int kThreads = 256;

// A decode step moves one row with one block: its loads must all be in flight at once (16-byte
// loads, kBatch a thread before any store; __restrict__ so the stores do not order them), or each
// waits on memory in turn (a byte or element at a time, 7.5 and 6.5 us for one 4096-wide row).
constexpr int kBatch = 4;

template <typename T>
__global__ void embedding_kernel(const T* __restrict__ table, const int32_t* __restrict__ ids, int64_t dim,
                                 void* __restrict__ out, ElemType out_type) {
  const int64_t row = blockIdx.x;
  const T* src = table + static_cast<int64_t>(ids[row]) * dim;
  if (dim % 8 != 0 || reinterpret_cast<uintptr_t>(table) % 16 != 0) {  // (a plugin's table may be a view)
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) store_float(out, out_type, row * dim + i, to_float(src[i]));
    return;
  }
  const uint4* chunks = reinterpret_cast<const uint4*>(src);
  const int64_t n = dim / 8;
  for (int64_t first = threadIdx.x; first < n; first += kBatch * blockDim.x) {
    uint4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t i = first + b * blockDim.x;
      if (i < n) v[b] = chunks[i];
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t i = first + b * blockDim.x;
      if (i >= n) continue;
      const T* e = reinterpret_cast<const T*>(&v[b]);
#pragma unroll
      for (int k = 0; k < 8; ++k) store_float(out, out_type, row * dim + i * 8 + k, to_float(e[k]));
    }
  }
}

__global__ void convert_kernel(const void* src, ElemType src_type, void* dst, ElemType dst_type, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store_float(dst, dst_type, i, load_as_float(src, src_type, i));
}

template <typename T>
__global__ void silu_mul_kernel(const T* gate_up, bool paired, T* out, int64_t rows, int64_t inter) {
  const int64_t n = rows * inter;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / inter, c = i % inter;
    const T* row = gate_up + r * 2 * inter;
    // Paired: gate c at paired_row(c), its up 8 rows on; else gate | up.
    const int64_t gate = paired ? paired_row(static_cast<int>(c), static_cast<int>(2 * inter)) : c;
    const int64_t up = paired ? gate + 8 : inter + c;
    out[i] = from_float<T>(silu_times(to_float(row[gate]), to_float(row[up])));
  }
}

__global__ void silu_mul_pair_kernel(const void* gate, ElemType gate_type, const void* up, ElemType up_type, void* out,
                                     ElemType out_type, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = load_as_float(gate, gate_type, i);
    store_float(out, out_type, i, silu_times(g, load_as_float(up, up_type, i)));
  }
}

__global__ void add_kernel(void* x, ElemType x_type, const void* y, ElemType y_type, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store_float(x, x_type, i, load_as_float(x, x_type, i) + load_as_float(y, y_type, i));
}

template <typename T>
__global__ void add_bias_kernel(void* y, ElemType y_type, const T* bias, int64_t rows, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store_float(y, y_type, i, load_as_float(y, y_type, i) + to_float(bias[i % n]));
}

__global__ void copy_columns_kernel(const char* src, int64_t src_row_bytes, int64_t offset, char* dst,
                                    int64_t width, int64_t rows) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, c = i % width;
    dst[i] = src[r * src_row_bytes + offset + c];
  }
}

__global__ void copy_columns_u32_kernel(const uint32_t* src, int64_t src_row, int64_t offset, uint32_t* dst,
                                        int64_t width, int64_t rows) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, c = i % width;
    dst[i] = src[r * src_row + offset + c];
  }
}

__global__ void gather_rows_kernel(const char* __restrict__ x, const int32_t* __restrict__ rows, int64_t row_bytes,
                                   char* __restrict__ out) {
  const int64_t i = blockIdx.x;
  const char* src = x + static_cast<int64_t>(rows[i]) * row_bytes;
  char* dst = out + i * row_bytes;
  if (row_bytes % 16 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(out) % 16 != 0) {
    for (int64_t b = threadIdx.x; b < row_bytes; b += blockDim.x) dst[b] = src[b];
    return;
  }
  const uint4* from = reinterpret_cast<const uint4*>(src);
  uint4* to = reinterpret_cast<uint4*>(dst);
  const int64_t n = row_bytes / 16;
  for (int64_t first = threadIdx.x; first < n; first += kBatch * blockDim.x) {
    uint4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (first + b * blockDim.x < n) v[b] = from[first + b * blockDim.x];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (first + b * blockDim.x < n) to[first + b * blockDim.x] = v[b];
  }
}

unsigned capped_grid(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

}  // namespace

void embedding(const void* table, const int32_t* ids, int64_t rows, int64_t dim, void* out, ElemType out_type,
               ElemType storage, cudaStream_t stream) {
  if (rows == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    embedding_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(static_cast<const T*>(table), ids, dim,
                                                                              out, out_type);
  });
}

void convert(const void* src, ElemType src_type, void* dst, ElemType dst_type, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  convert_kernel<<<capped_grid(n), kThreads, 0, stream>>>(src, src_type, dst, dst_type, n);
}

void silu_mul(const void* gate_up, bool gate_up_paired, void* out, int64_t rows, int64_t inter, ElemType storage,
              cudaStream_t stream) {
  if (rows * inter == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    silu_mul_kernel<T><<<capped_grid(rows * inter), kThreads, 0, stream>>>(
        static_cast<const T*>(gate_up), gate_up_paired, static_cast<T*>(out), rows, inter);
  });
}

void silu_mul_pair(const void* gate, ElemType gate_type, const void* up, ElemType up_type, void* out,
                   ElemType out_type, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  silu_mul_pair_kernel<<<capped_grid(n), kThreads, 0, stream>>>(gate, gate_type, up, up_type, out, out_type, n);
}

void add_inplace(void* x, ElemType x_type, const void* y, ElemType y_type, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<capped_grid(n), kThreads, 0, stream>>>(x, x_type, y, y_type, n);
}

void add_bias(void* y, ElemType y_type, const void* bias, int64_t rows, int64_t n, ElemType storage,
              cudaStream_t stream) {
  if (rows * n == 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_bias_kernel<T><<<capped_grid(rows * n), kThreads, 0, stream>>>(y, y_type, static_cast<const T*>(bias), rows, n);
  });
}

void copy_columns(const void* src, int64_t src_row_bytes, int64_t offset_bytes, void* dst, int64_t width_bytes,
                  int64_t rows, cudaStream_t stream) {
  if (rows * width_bytes == 0) return;
  if (src_row_bytes % 4 == 0 && offset_bytes % 4 == 0 && width_bytes % 4 == 0) {
    copy_columns_u32_kernel<<<capped_grid(rows * width_bytes / 4), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(src), src_row_bytes / 4, offset_bytes / 4, static_cast<uint32_t*>(dst),
        width_bytes / 4, rows);
    return;
  }
  copy_columns_kernel<<<capped_grid(rows * width_bytes), kThreads, 0, stream>>>(
      static_cast<const char*>(src), src_row_bytes, offset_bytes, static_cast<char*>(dst), width_bytes, rows);
}

void gather_rows(const void* x, const int32_t* rows, int64_t count, int64_t row_bytes, void* out,
                 cudaStream_t stream) {
  if (count == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(count), kThreads, 0, stream>>>(static_cast<const char*>(x), rows,
                                                                            row_bytes, static_cast<char*>(out));
}

}  // namespace drift::cuda
