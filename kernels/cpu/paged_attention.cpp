#include "kernels/cpu/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/parallel.h"

namespace drift::cpu {
namespace {

// entry: the (token, kv head) index of kv_len / mask_start; t: the mask row.
bool visible(const PagedAttentionArgs& a, int64_t entry, int64_t t, int64_t pos) {
  if (!a.mask || pos < a.mask_start[entry]) return true;
  const int64_t bit = pos - a.mask_start[entry];
  if (bit >= a.mask_words * 64) return false;
  return (a.mask[t * a.mask_words + bit / 64] >> (bit % 64)) & 1u;
}

// The position a row's window starts at (0: no window). A row's position is its last visible
// one's, but a tree row's masked positions hold the whole tree: the ones it sees are its ancestors
// and itself, one a depth, so it sits at mask_start + (their count - 1).
int64_t window_start(const PagedAttentionArgs& a, int64_t entry, int64_t t, int64_t len, int64_t masked_from) {
  if (a.window <= 0) return 0;
  int64_t position = len - 1;
  if (masked_from < len) {
    position = masked_from - 1;
    for (int64_t pos = masked_from; pos < len; ++pos) position += visible(a, entry, t, pos) ? 1 : 0;
  }
  return std::max<int64_t>(0, position - a.window + 1);
}

// One query head of one token: scores over visible positions, softmax, weighted sum of V.
void attend_one_head(const PagedAttentionArgs& a, int64_t t, int64_t h, std::vector<float>& scores) {
  const int64_t kv_head = h / (a.num_heads / a.num_kv_heads);
  const int64_t list = a.tables_per_seq > 1 ? kv_head : 0;
  const int64_t entry = t * a.tables_per_seq + list;
  const int32_t* table = a.block_tables[a.token_seq[t] * a.tables_per_seq + list];
  const float* q = a.q + (t * a.num_heads + h) * a.head_dim;
  const int64_t len = a.kv_len[entry];
  const int64_t masked_from = a.mask ? std::min<int64_t>(len, a.mask_start[entry]) : len;
  const int64_t first = window_start(a, entry, t, len, masked_from);
  scores.assign(len, -std::numeric_limits<float>::infinity());
  float max_score = -std::numeric_limits<float>::infinity();
  auto score = [&](int64_t pos) {
    const int64_t slot = static_cast<int64_t>(table[pos / a.block_size]) * a.block_size + pos % a.block_size;
    scores[pos] = dot(q, a.k_cache + (slot * a.num_kv_heads + kv_head) * a.head_dim, a.head_dim) * a.scale;
    max_score = std::max(max_score, scores[pos]);
  };
  for (int64_t pos = first; pos < masked_from; ++pos) score(pos);
  // Masked positions: the visible ones' own positions are masked_from, masked_from + 1, ... (a
  // path), which the window compares, not where the tree put them.
  for (int64_t pos = masked_from, own = masked_from; pos < len; ++pos)
    if (visible(a, entry, t, pos) && own++ >= first) score(pos);
  // A sink joins the softmax as one more logit (shifting by the larger max, as transformers does).
  const float sink = a.sinks ? a.sinks[h] : -std::numeric_limits<float>::infinity();
  max_score = std::max(max_score, sink);
  float* out = a.out + (t * a.num_heads + h) * a.head_dim;
  std::fill(out, out + a.head_dim, 0.0f);
  double sum = a.sinks ? std::exp(sink - max_score) : 0.0;
  for (int64_t pos = std::min(first, masked_from); pos < len; ++pos) {
    if (scores[pos] == -std::numeric_limits<float>::infinity()) continue;
    const float p = std::exp(scores[pos] - max_score);
    sum += p;
    const int64_t slot = static_cast<int64_t>(table[pos / a.block_size]) * a.block_size + pos % a.block_size;
    const float* v = a.v_cache + (slot * a.num_kv_heads + kv_head) * a.head_dim;
    for (int64_t d = 0; d < a.head_dim; ++d) out[d] += p * v[d];
  }
  const float inv = sum > 0 ? static_cast<float>(1.0 / sum) : 0.0f;
  for (int64_t d = 0; d < a.head_dim; ++d) out[d] *= inv;
}

}  // namespace

void paged_attention(const PagedAttentionArgs& a) {
  // Split only when there is enough work to pay for waking the workers (~64K multiply-adds).
  int64_t total_kv = 0;
  for (int64_t t = 0; t < a.tokens; ++t) total_kv += a.kv_len[t * a.tables_per_seq];
  const int64_t work_per_item = std::max<int64_t>(1, total_kv / std::max<int64_t>(1, a.tokens) * a.head_dim * 2);
  const int64_t min_chunk = std::max<int64_t>(1, (int64_t{1} << 16) / work_per_item);
  parallel_for(a.tokens * a.num_heads, min_chunk, [&](int64_t begin, int64_t end) {
    std::vector<float> scores;
    for (int64_t i = begin; i < end; ++i) attend_one_head(a, i / a.num_heads, i % a.num_heads, scores);
  });
}

}  // namespace drift::cpu
