#include "core/speculation/kv_view_batch.h"

#include <algorithm>

#include "core/error.h"

namespace drift {
namespace {

// One layer's metadata: every (sequence, list) table and every (token, list) length, from the
// forward's whole-table metadata, with the partial chunks' lists at that layer.
AttentionMetadata layer_metadata(const AttentionMetadata& full, const SchedulerOutput& scheduled,
                                 std::span<const KvView> views, const KvViewShape& shape, int64_t layer,
                                 int64_t lists_per_seq) {
  AttentionMetadata m;
  m.token_seq = full.token_seq;
  m.slots = full.slots;
  m.mask = full.mask;
  m.mask_words = full.mask_words;
  m.tables_per_seq = lists_per_seq;
  const size_t seqs = full.block_tables.size();
  m.block_tables.resize(seqs * lists_per_seq);
  // Per (sequence, list): how far the list moves positions at or after the tail's start.
  std::vector<int64_t> shift(seqs * lists_per_seq, 0);
  for (size_t s = 0; s < seqs; ++s) {
    const std::vector<int32_t>& table = full.block_tables[s];
    const KvView* view = s < views.size() && !views[s].full ? &views[s] : nullptr;
    for (int64_t h = 0; h < lists_per_seq; ++h) {
      std::vector<int32_t>& list = m.block_tables[s * lists_per_seq + h];
      if (!view) {
        list = table;
        continue;
      }
      const ScheduledChunk& chunk = scheduled.chunks[s];
      const int64_t tail = chunk.start / shape.block_size;
      const std::vector<drift_page_id_t>& chosen =
          view->lists[view->per_kv_head ? layer * shape.num_kv_heads + h : layer];
      list.assign(chosen.begin(), chosen.end());
      list.insert(list.end(), table.begin() + tail, table.end());
      shift[s * lists_per_seq + h] = (static_cast<int64_t>(chosen.size()) - tail) * shape.block_size;
    }
  }
  const size_t tokens = full.token_seq.size();
  m.kv_len.resize(tokens * lists_per_seq);
  if (!full.mask.empty()) m.mask_start.resize(tokens * lists_per_seq);
  for (size_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < lists_per_seq; ++h) {
      // The forward's metadata has one entry per token (build_forward_batch never lists per kv head).
      const int64_t moved = shift[full.token_seq[t] * lists_per_seq + h];
      m.kv_len[t * lists_per_seq + h] = static_cast<int32_t>(full.kv_len[t] + moved);
      if (!full.mask.empty()) m.mask_start[t * lists_per_seq + h] = static_cast<int32_t>(full.mask_start[t] + moved);
    }
  return m;
}

}  // namespace

std::map<int64_t, QueryRows> apply_kv_views(ForwardBatch& batch, const SchedulerOutput& scheduled,
                                            std::span<const KvView> views, const KvViewShape& shape) {
  DRIFT_CHECK(views.size() == scheduled.chunks.size(), "{} views for {} chunks", views.size(), scheduled.chunks.size());
  DRIFT_CHECK(batch.attention.tables_per_seq == 1, "views apply to a forward's own metadata (one table a sequence)");
  std::map<int64_t, QueryRows> kept;
  bool partial = false, per_kv_head = false;
  int64_t first_token = 0;
  for (size_t c = 0; c < views.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    if (!views[c].full) {
      DRIFT_CHECK(!chunk.draft.empty() && chunk.count == 1 + static_cast<int64_t>(chunk.draft.size()),
                  "a partial view for a chunk that is not a verify chunk");
      partial = true;
      per_kv_head |= views[c].per_kv_head;
    }
    if (views[c].keep_queries && !chunk.draft.empty()) {
      kept[chunk.seq->id] = {static_cast<int64_t>(batch.query_rows.size()), chunk.count};
      for (int64_t i = 0; i < chunk.count; ++i) batch.query_rows.push_back(static_cast<int32_t>(first_token + i));
    }
    first_token += chunk.count;
  }
  if (partial) {
    const int64_t lists_per_seq = per_kv_head ? shape.num_kv_heads : 1;
    batch.layer_attention.reserve(shape.num_layers);
    for (int64_t l = 0; l < shape.num_layers; ++l)
      batch.layer_attention.push_back(layer_metadata(batch.attention, scheduled, views, shape, l, lists_per_seq));
  }
  return kept;
}

}  // namespace drift
