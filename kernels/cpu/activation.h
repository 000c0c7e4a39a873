#pragma once
#include <cstdint>

namespace drift::cpu {

// out[t, i] = silu(gate_up[t, i]) * gate_up[t, intermediate + i]: SwiGLU over a fused
// [tokens, 2 * intermediate] gate/up projection.
void silu_mul(const float* gate_up, float* out, int64_t tokens, int64_t intermediate);

// x += y elementwise (residual connections).
void add_inplace(float* x, const float* y, int64_t n);

// Numerically stable softmax of each row, in place.
void softmax(float* x, int64_t rows, int64_t cols);

}  // namespace drift::cpu
