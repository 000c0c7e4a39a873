#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

namespace drift::cpu {

void rope(float* x, const int32_t* positions, const float* inv_freq, int64_t tokens, int64_t heads,
          int64_t head_dim, float attention_scale) {
  const int64_t half = head_dim / 2;
  std::vector<float> cos_v(half), sin_v(half);
  for (int64_t t = 0; t < tokens; ++t) {
    // Angles in fp32 exactly as transformers computes them (inv_freq * position, then cos/sin).
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(positions[t]) * inv_freq[i];
      cos_v[i] = std::cos(angle) * attention_scale;
      sin_v[i] = std::sin(angle) * attention_scale;
    }
    for (int64_t h = 0; h < heads; ++h) {
      float* v = x + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos_v[i] - b * sin_v[i];
        v[i + half] = b * cos_v[i] + a * sin_v[i];
      }
    }
  }
}

}  // namespace drift::cpu
