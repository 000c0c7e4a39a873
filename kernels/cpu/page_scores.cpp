#include "kernels/cpu/page_scores.h"

#include <algorithm>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/parallel.h"

namespace drift::cpu {

void page_scores(const float* q, const float* kmax, const float* kmin, float* out, int64_t rows, int64_t num_heads,
                 int64_t num_kv_heads, int64_t head_dim, int64_t num_pages) {
  if (num_kv_heads <= 0 || num_pages <= 0) return;
  const int64_t group = num_heads / num_kv_heads;
  const float inv = 1.0f / static_cast<float>(rows * group);
  // One (kv head, page) score per index: the partition never changes a result.
  parallel_for(num_kv_heads * num_pages, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t h = i / num_pages, p = i % num_pages;
      const float* hi = kmax + (p * num_kv_heads + h) * head_dim;
      const float* lo = kmin + (p * num_kv_heads + h) * head_dim;
      float sum = 0.0f;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t g = 0; g < group; ++g) {
          const float* qh = q + (r * num_heads + h * group + g) * head_dim;
          sum += std::max(dot(qh, hi, head_dim), dot(qh, lo, head_dim));
        }
      out[h * num_pages + p] = sum * inv;
    }
  });
}

}  // namespace drift::cpu
