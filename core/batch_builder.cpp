#include "core/batch_builder.h"

#include <algorithm>

#include "core/speculation/draft_tree.h"

namespace drift {
namespace {

// The windowed layers read and write the same tokens through their own pages.
void add_window_attention(ForwardBatch& batch, const SchedulerOutput& scheduled, const WindowPages& window,
                          const std::vector<int64_t>& slot_positions) {
  AttentionMetadata& w = batch.window_attention;
  w = batch.attention;
  w.block_tables.clear();
  for (const ScheduledChunk& chunk : scheduled.chunks) w.block_tables.push_back(window.block_table(chunk.seq->kv));
  for (size_t t = 0; t < slot_positions.size(); ++t)
    w.slots[t] = window.slot(scheduled.chunks[w.token_seq[t]].seq->kv, slot_positions[t]);
}

}  // namespace

// One ragged forward. A verify chunk lays out its root (the decode token, position P) and then
// node i of its draft in slot P + 1 + i, at rope position P + depth(i), seeing the committed
// prefix and -- through the tree mask -- only its own ancestors among the tree's slots; logits
// come back for the root and every node. Without drafts there is no mask: plain causal attention.
ForwardBatch build_forward_batch(const SchedulerOutput& scheduled, const KVCacheManager& kv_cache) {
  ForwardBatch batch;
  AttentionMetadata& a = batch.attention;
  int64_t words = 0;  // mask words per token: enough for the largest tree
  for (const ScheduledChunk& chunk : scheduled.chunks) words = std::max<int64_t>(words, (chunk.draft.size() + 63) / 64);
  a.mask_words = words;
  std::vector<int64_t> slot_positions;  // each token's position in its sequence's slots
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    const SeqHandle kv = chunk.seq->kv;
    a.block_tables.push_back(kv_cache.block_table(kv));
    const int64_t end = chunk.start + chunk.count - static_cast<int64_t>(chunk.draft.size());
    for (int64_t pos = chunk.start; pos < end; ++pos) {
      batch.tokens.push_back(chunk.seq->token_at(pos));
      batch.positions.push_back(static_cast<int32_t>(pos));
      a.token_seq.push_back(static_cast<int32_t>(c));
      a.kv_len.push_back(static_cast<int32_t>(pos + 1));
      a.slots.push_back(kv_cache.slot(kv, pos));
      slot_positions.push_back(pos);
      if (words > 0) {  // nothing hidden: the mask starts past what the token sees
        a.mask_start.push_back(static_cast<int32_t>(pos + 1));
        a.mask.insert(a.mask.end(), words, 0);
      }
    }
    if (chunk.wants_logits) batch.logit_rows.push_back(static_cast<int32_t>(batch.tokens.size() - 1));
    if (chunk.draft.empty()) continue;
    const std::vector<int32_t> depth = chunk.draft.depths();
    const std::vector<uint64_t> rows = ancestor_mask(chunk.draft, words);
    for (size_t i = 0; i < chunk.draft.size(); ++i) {
      const int64_t slot_pos = end + static_cast<int64_t>(i);
      batch.tokens.push_back(chunk.draft.tokens[i]);
      batch.positions.push_back(static_cast<int32_t>(end - 1 + depth[i]));
      a.token_seq.push_back(static_cast<int32_t>(c));
      a.kv_len.push_back(static_cast<int32_t>(slot_pos + 1));
      a.slots.push_back(kv_cache.slot(kv, slot_pos));
      slot_positions.push_back(slot_pos);
      a.mask_start.push_back(static_cast<int32_t>(end));
      a.mask.insert(a.mask.end(), rows.begin() + i * words, rows.begin() + (i + 1) * words);
      batch.logit_rows.push_back(static_cast<int32_t>(batch.tokens.size() - 1));
    }
  }
  if (const WindowPages* window = kv_cache.window_pages())
    add_window_attention(batch, scheduled, *window, slot_positions);
  return batch;
}

}  // namespace drift
