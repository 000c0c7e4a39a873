#include "kernels/cpu/linear.h"

#include <algorithm>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/parallel.h"

namespace drift::cpu {

void linear(const float* x, const float* w, const float* bias, float* y, int64_t rows,
            int64_t in_features, int64_t out_features) {
  // Output features outermost: each weight row is streamed once per call and reused for every
  // input row while it is in cache (weights dominate memory traffic at small batch).
  // Waking workers costs microseconds; split only when each part gets ~256K multiply-adds.
  const int64_t macs_per_feature = std::max<int64_t>(1, rows * in_features);
  const int64_t min_chunk = std::max<int64_t>(16, (int64_t{1} << 18) / macs_per_feature);
  parallel_for(out_features, min_chunk, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      const float* wo = w + o * in_features;
      const float b = bias ? bias[o] : 0.0f;
      for (int64_t t = 0; t < rows; ++t) y[t * out_features + o] = dot(x + t * in_features, wo, in_features) + b;
    }
  });
}

}  // namespace drift::cpu
