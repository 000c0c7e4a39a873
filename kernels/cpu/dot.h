#pragma once
// Dot product with 8 independent fp32 accumulators combined in a fixed order: vectorisable
// without -ffast-math, and bitwise reproducible whatever the batch a row belongs to (a row's
// result never depends on the other rows computed alongside it).
#include <cstdint>

namespace drift::cpu {

inline float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

}  // namespace drift::cpu
