#pragma once
// Attention over a paged KV cache for a ragged batch (prefill chunks, decode tokens and tree
// verification nodes mixed). Each query token belongs to one sequence, sees the first
// `kv_len[t]` positions of that sequence's block table, and optionally a tree mask that hides
// some of the positions at or after `mask_start[t]`.
#include <cstdint>

namespace drift::cpu {

struct PagedAttentionArgs {
  const float* q = nullptr;           // [tokens, num_heads, head_dim]
  const float* k_cache = nullptr;     // [num_slots, num_kv_heads, head_dim], slot = page*bs + off
  const float* v_cache = nullptr;
  float* out = nullptr;               // [tokens, num_heads, head_dim]
  int64_t tokens = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
  float scale = 1.0f;
  const int32_t* token_seq = nullptr;       // [tokens] -> sequence index
  const int32_t* const* block_tables = nullptr;  // per sequence: page ids
  const int32_t* kv_len = nullptr;          // [tokens] visible positions
  // 1, or num_kv_heads for page lists per (sequence, kv head): then block_tables[s * H + h] is
  // kv head h's list, and kv_len / mask_start are indexed [t * H + h].
  int64_t tables_per_seq = 1;
  // Optional tree mask: for token t, position p >= mask_start[t] is visible only when bit
  // (p - mask_start[t]) of mask row t is set. mask_words 64-bit words per row.
  const int32_t* mask_start = nullptr;
  const uint64_t* mask = nullptr;
  int64_t mask_words = 0;
  // Optional attention sinks [num_heads]: a logit per head in every softmax's denominator, with
  // no value (GPT-OSS). Optional window > 0: token t sees only the positions within `window` of
  // its own, [p - window + 1, p]: p = kv_len[t] - 1 for a causal row; for a tree row the visible
  // masked positions must be a path (its ancestors and itself, as verification's masks are), the
  // row at mask_start + (their count - 1) and each of them at mask_start + its rank.
  const float* sinks = nullptr;
  int64_t window = 0;
};

void paged_attention(const PagedAttentionArgs& args);

}  // namespace drift::cpu
