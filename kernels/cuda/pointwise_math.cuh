#pragma once
// Pointwise arithmetic shared by a standalone kernel and a GEMM epilogue that fuses it, so the two
// give the same bits: SwiGLU's silu(g) * u and RoPE's rotation of a (i, i + head_dim / 2) pair.

namespace drift::cuda {

// Every step is an explicitly rounded intrinsic: the compiler may not contract or reorder them
// (a * c - b * s may otherwise become fma(a, c, -b * s) in one kernel and fma(-b, s, a * c) in
// another, and the two differ in the last bit now and then).
__device__ __forceinline__ float silu_times(float gate, float up) {
  return __fmul_rn(__fdiv_rn(gate, __fadd_rn(1.0f, expf(-gate))), up);
}

// cos / sin of position * inv_freq, in fp32 with full range reduction (positions reach 32K and
// beyond), scaled by attention_scale (YaRN-style scaling; 1 otherwise).
struct RopeAngle {
  float c, s;
};
__device__ __forceinline__ RopeAngle rope_angle(float position, float inv_freq, float attention_scale) {
  float s, c;
  sincosf(__fmul_rn(position, inv_freq), &s, &c);
  return {__fmul_rn(c, attention_scale), __fmul_rn(s, attention_scale)};
}

// The rotate-half rotation of (a, b) = (x[i], x[i + half]), as transformers computes it.
__device__ __forceinline__ float rope_low(float a, float b, RopeAngle r) {
  return __fmaf_rn(a, r.c, -__fmul_rn(b, r.s));
}
__device__ __forceinline__ float rope_high(float a, float b, RopeAngle r) {
  return __fmaf_rn(b, r.c, __fmul_rn(a, r.s));
}

}  // namespace drift::cuda
