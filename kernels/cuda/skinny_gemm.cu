// Skinny GEMM: y = x w^T for 1..32 rows. Decode and tree verification are bound by reading w
// once; each warp owns COLS output columns and streams their weight rows with 16-byte loads,
// UNROLL vectors deep, while every row of x is applied to each loaded vector. With
// k % VEC != 0 for VEC = 8, narrower loads are used (tiny test models only).
//
// Batch invariance: for any (r, n), lane l accumulates k-vectors l, l+32, ... in order with
// fused multiply-adds, then the warp reduces with one fixed butterfly. Neither depends on ROWS,
// COLS or the number of rows, so a row's result is bit-identical however many rows share the
// call (a 17-row verify and a 1-row decode agree exactly).
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kWarps = 4;

// VEC bf16 per load: 8 (16 bytes) when rows allow it, else 2 or 1 (odd k, as the tiny test models').
template <int VEC>
struct Load;
template <>
struct Load<8> {
  using T = uint4;
};
template <>
struct Load<2> {
  using T = uint32_t;
};
template <>
struct Load<1> {
  using T = uint16_t;
};

template <typename T, int VEC>
__device__ __forceinline__ void fma_vec(const typename Load<VEC>::T& w, const typename Load<VEC>::T& x, float& acc) {
  if constexpr (VEC == 1) {
    acc = fmaf(to_float(*reinterpret_cast<const T*>(&w)), to_float(*reinterpret_cast<const T*>(&x)), acc);
  } else {
    using P = typename Pair<T>::type;
    const P* wv = reinterpret_cast<const P*>(&w);
    const P* xv = reinterpret_cast<const P*>(&x);
#pragma unroll
    for (int i = 0; i < VEC / 2; ++i) {
      const float2 wf = to_float2(wv[i]);
      const float2 xf = to_float2(xv[i]);
      acc = fmaf(wf.x, xf.x, acc);
      acc = fmaf(wf.y, xf.y, acc);
    }
  }
}

template <typename T, int ROWS, int COLS, int UNROLL, int VEC>
__global__ void __launch_bounds__(kWarps * 32) skinny_gemm_kernel(const T* __restrict__ x, const T* __restrict__ w,
                                                                   const T* __restrict__ bias, void* y,
                                                                   ElemType y_type, int rows, int n, int k) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int col0 = (blockIdx.x * kWarps + warp) * COLS;
  if (col0 >= n) return;
  using Vec = typename Load<VEC>::T;
  const int kvecs = k / VEC;
  const Vec* xv = reinterpret_cast<const Vec*>(x);
  const Vec* wv = reinterpret_cast<const Vec*>(w);

  float acc[ROWS][COLS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < COLS; ++c) acc[r][c] = 0.0f;

  for (int base = lane; base < kvecs; base += 32 * UNROLL) {
    Vec wreg[UNROLL][COLS];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int c = 0; c < COLS; ++c) {
        const int kv = base + u * 32;
        const int col = min(col0 + c, n - 1);  // clamp: columns past n compute garbage, never stored
        wreg[u][c] = kv < kvecs ? wv[static_cast<int64_t>(col) * kvecs + kv] : Vec{};
      }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int kv = base + u * 32;
      if (kv >= kvecs) break;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        if (r >= rows) break;
        const Vec xr = xv[static_cast<int64_t>(r) * kvecs + kv];
#pragma unroll
        for (int c = 0; c < COLS; ++c) fma_vec<T, VEC>(wreg[u][c], xr, acc[r][c]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < COLS; ++c)
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[r][c] += __shfl_xor_sync(0xffffffffu, acc[r][c], offset);

  // Lane (r * COLS + c) % 32 stores element (r, c): the stores spread over the warp.
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < COLS; ++c) {
      if ((r * COLS + c) % 32 != lane || r >= rows || col0 + c >= n) continue;
      float v = acc[r][c];
      if (bias) v += to_float(bias[col0 + c]);
      store_float(y, y_type, static_cast<int64_t>(r) * n + col0 + c, v);
    }
}

template <int ROWS, int COLS, int UNROLL, int VEC>
void launch_vec(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows, int64_t n,
                int64_t k, ElemType storage, cudaStream_t stream) {
  const unsigned blocks = grid_for(n, kWarps * COLS);
  dispatch_storage(storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    skinny_gemm_kernel<T, ROWS, COLS, UNROLL, VEC><<<blocks, kWarps * 32, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias), y, y_type,
        static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k));
  });
}

template <int ROWS, int COLS, int UNROLL>
void launch(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows, int64_t n,
            int64_t k, ElemType storage, cudaStream_t stream) {
  if (k % 8 == 0) launch_vec<ROWS, COLS, UNROLL, 8>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (k % 2 == 0) launch_vec<ROWS, COLS, UNROLL, 2>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else launch_vec<ROWS, COLS, UNROLL, 1>(x, w, bias, y, y_type, rows, n, k, storage, stream);
}

}  // namespace

bool skinny_gemm(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows, int64_t n,
                 int64_t k, ElemType storage, cudaStream_t stream) {
  if (rows < 1 || rows > kSkinnyMaxRows) return false;
  // Fewer rows leave registers for more columns and deeper unrolling: more bytes in flight.
  if (rows == 1) launch<1, 4, 4>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (rows <= 2) launch<2, 4, 4>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (rows <= 4) launch<4, 4, 2>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (rows <= 8) launch<8, 2, 2>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else if (rows <= 16) launch<16, 2, 2>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  else launch<32, 1, 2>(x, w, bias, y, y_type, rows, n, k, storage, stream);
  return true;
}

}  // namespace drift::cuda
