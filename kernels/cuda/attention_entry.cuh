#pragma once
// Shared by both attention kernel families: where a query's kv_len / mask_start live, and the
// sliding window's first position (kernels/cpu/paged_attention.cpp's rule).
#include "kernels/cuda/ops.h"

namespace drift::cuda {

// entry: the (query, kv head) index of kv_len / mask_start (the query itself unless page lists
// are per kv head); t: the query (its mask row).
__device__ __forceinline__ int64_t entry_of(const PagedAttentionParams& p, int64_t t, int64_t kv_head) {
  return p.tables_per_seq > 1 ? t * p.tables_per_seq + kv_head : t;
}

// Set mask bits of row t below `bits` (bits <= mask_words * 64).
__device__ __forceinline__ int64_t visible_below(const PagedAttentionParams& p, int64_t t, int64_t bits) {
  int64_t n = 0;
  const uint64_t* row = p.mask + t * p.mask_words;
  for (int64_t w = 0; w * 64 < bits; ++w) {
    const int64_t take = min(static_cast<int64_t>(64), bits - w * 64);
    n += __popcll(take == 64 ? row[w] : row[w] & ((uint64_t{1} << take) - 1));
  }
  return n;
}

// The earliest own position a query of a windowed layer (p.window > 0) sees; 0 without a window.
// Positions before masked_from = min(len, mask_start) are the sequence's own; a visible masked
// (tree) position sits at masked_from + its rank among the row's visible masked positions (a path:
// its ancestors, one a depth), and the row itself is the last visible one.
__device__ __forceinline__ int64_t window_first(const PagedAttentionParams& p, int64_t entry, int64_t t, int64_t len) {
  if (p.window <= 0) return 0;
  const int64_t masked_from = p.mask ? min(len, static_cast<int64_t>(p.mask_start[entry])) : len;
  int64_t position = len - 1;
  if (masked_from < len) position = masked_from - 1 + visible_below(p, t, min(len - masked_from, p.mask_words * 64));
  return max(static_cast<int64_t>(0), position - p.window + 1);
}

}  // namespace drift::cuda
