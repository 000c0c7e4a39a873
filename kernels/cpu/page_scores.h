#pragma once
// Query-aware page scores (SpecPV / Quest block selection) over per-page key summaries.
#include <cstdint>

namespace drift::cpu {

// out[h, p] = the mean, over the `rows` query rows r and the query heads g of kv head h's group
// (heads h * G .. h * G + G - 1, G = num_heads / num_kv_heads), of
// max(dot(q[r, h * G + g], kmax[p, h]), dot(q[r, h * G + g], kmin[p, h])), in fp32.
// q [rows, num_heads, head_dim]; kmax, kmin [num_pages, num_kv_heads, head_dim]; out
// [num_kv_heads, num_pages]. Each score sums its terms row by row, a row's heads in order.
void page_scores(const float* q, const float* kmax, const float* kmin, float* out, int64_t rows, int64_t num_heads,
                 int64_t num_kv_heads, int64_t head_dim, int64_t num_pages);

}  // namespace drift::cpu
