#pragma once
// The residual stream's RMSNorm, factored so that no kernel of its own runs between two GEMMs
// (ops.h, "the residual stream's norm, factored"): the GEMM that adds into the residual stream
// stores factored_value (residual * weight) and the sum of squares of each kNormGroup columns it
// owns; the next GEMM scales each row's sums by row_inv_rms. A consumer that cannot scale forms
// the rows with normed_value instead.
//
// Every kernel goes through these functions, in this order: the residual, the factored rows and
// the sums get the same bits whichever producer kernel ran and however many rows the call had.
// A consumer scales or forms by its weights' shapes alone, never by the row count, so a row also
// gets the same bits in a decode and in a verification (the batch invariance the speculative
// tests rely on).
#include "kernels/cuda/dtype.cuh"

namespace drift::cuda {

// The updated residual value: delta is rounded to storage first, as a stored linear output is.
__device__ __forceinline__ float residual_plus(float residual, float delta_rounded) {
  return __fadd_rn(residual, delta_rounded);
}

// The sum of squares of one group: columns in order, one fma each, from zero.
template <int N>
__device__ __forceinline__ float group_square_sum(const float (&v)[N], int count) {
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < N; ++c)
    if (c < count) s = __fmaf_rn(v[c], v[c], s);
  return s;
}

// 1 / rms of a row from its groups' sums: lane l adds groups l, l + 32, ... in order, then a
// butterfly over the warp (every lane ends with the same bits: each step adds the same two
// values, only in swapped order). All 32 lanes of the warp must call it. Eight loads a lane go
// out at once (a row of 4096 columns in one trip to memory, not eight).
__device__ __forceinline__ float row_inv_rms(const float* __restrict__ sums, int groups, int dim, float eps) {
  constexpr int kBatch = 8;
  int g = threadIdx.x % 32;
  float s = 0.0f;
  for (; g + 32 * (kBatch - 1) < groups; g += 32 * kBatch) {
    float v[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) v[j] = __ldg(sums + g + 32 * j);
#pragma unroll
    for (int j = 0; j < kBatch; ++j) s = __fadd_rn(s, v[j]);
  }
  for (; g < groups; g += 32) s = __fadd_rn(s, __ldg(sums + g));
  for (int offset = 16; offset > 0; offset /= 2) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, offset));
  return rsqrtf(__fadd_rn(__fdiv_rn(s, static_cast<float>(dim)), eps));
}

// The factored element: residual * weight, rounded to storage by the caller.
__device__ __forceinline__ float factored_value(float residual, float weight) { return __fmul_rn(residual, weight); }

// Asks L1 for `count` floats from p (a 128-byte line a thread), without waiting for them: a GEMM
// block does it for its row scales' sums before its k loop and reads them after it.
__device__ __forceinline__ void prefetch_l1(const float* p, int64_t count) {
  for (int64_t line = threadIdx.x; line * 32 < count; line += blockDim.x)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p + line * 32));
}

// One normed element: residual / rms * weight, rounded to storage by the caller.
__device__ __forceinline__ float normed_value(float residual, float inv_rms, float weight) {
  return __fmul_rn(__fmul_rn(residual, inv_rms), weight);
}

// Eight consecutive normed elements (residual r[0..7], weight w8 as 8 packed storage values) as
// the 16 bytes a norm kernel stores.
template <typename T>
__device__ __forceinline__ uint4 normed_pack8(float4 r0, float4 r1, uint4 w8, float inv) {
  using P = typename Pair<T>::type;
  const P* w = reinterpret_cast<const P*>(&w8);
  const float2 w0 = to_float2(w[0]), w1 = to_float2(w[1]), w2 = to_float2(w[2]), w3 = to_float2(w[3]);
  uint4 out;
  P* o = reinterpret_cast<P*>(&out);
  o[0] = pack_pair<T>(normed_value(r0.x, inv, w0.x), normed_value(r0.y, inv, w0.y));
  o[1] = pack_pair<T>(normed_value(r0.z, inv, w1.x), normed_value(r0.w, inv, w1.y));
  o[2] = pack_pair<T>(normed_value(r1.x, inv, w2.x), normed_value(r1.y, inv, w2.y));
  o[3] = pack_pair<T>(normed_value(r1.z, inv, w3.x), normed_value(r1.w, inv, w3.y));
  return out;
}

}  // namespace drift::cuda
