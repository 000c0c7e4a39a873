#include "kernels/cpu/activation.h"

#include <algorithm>
#include <cmath>

namespace drift::cpu {

void silu_mul(const float* gate_up, float* out, int64_t tokens, int64_t intermediate) {
  for (int64_t t = 0; t < tokens; ++t) {
    const float* g = gate_up + t * 2 * intermediate;
    const float* u = g + intermediate;
    float* o = out + t * intermediate;
    for (int64_t i = 0; i < intermediate; ++i) o[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  }
}

void add_inplace(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void softmax(float* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    const float max_v = *std::max_element(row, row + cols);
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = std::exp(row[c] - max_v);
      sum += row[c];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t c = 0; c < cols; ++c) row[c] *= inv;
  }
}

}  // namespace drift::cpu
