// After each target forward: the draft KV follows the committed positions, in windows of at most
// `extension_rows` rows (a long prefill's workspace stays bounded). For position p the
// head's input is the NEXT token x[p+1] and h = fc(cat of the target's hidden states entering
// the aux layers at p); causal attention over the sequence's own draft KV. When p is the
// position before the last committed token, the row's distribution is the root's: the first
// draft token's candidates, kept (with the row's output y) for on_propose in the same step.
#include <algorithm>

#include "eagle3_state.h"

namespace eagle3 {
namespace {

struct Pending {
  Request* request = nullptr;
  const drift_forward_rows_t* rows = nullptr;
  std::vector<drift_token_t> tokens;  // the sequence's committed tokens
};

// A window's share of one sequence's forward rows: rows [offset, offset + count) of them.
struct Slice {
  Pending* seq = nullptr;
  int64_t offset = 0, count = 0;
  bool ends_sequence() const { return offset + count == seq->rows->num_rows; }
};

// The slice's aux hidden states, [count, 3 * target_H] F32: the captured layer outputs, or for aux
// layer 0 (the embeddings) the rows' own tokens embedded.
void gather_aux(Plugin& p, const Slice& slice, drift_tensor_t out) {
  const Pending& s = *slice.seq;
  const drift_seq_id_t seq = s.rows->seq_id;
  const int64_t n = s.rows->num_rows, width = p.head->config().target_hidden_size;
  std::vector<drift_tensor_t> parts;
  for (int32_t id : p.head->config().aux_layer_ids) {
    if (id > 0) {
      const drift_tensor_t hidden = p.host.hidden_states(seq, id - 1);
      if (hidden.ndim != 2 || hidden.shape[0] != n || hidden.shape[1] != width)
        fail("the host gave hidden states of shape [" + std::to_string(hidden.shape[0]) + ", " +
             std::to_string(hidden.shape[1]) + "] for " + std::to_string(n) + " rows");
      parts.push_back(rows(hidden, slice.offset, slice.count));
      continue;
    }
    const auto first = s.tokens.begin() + s.rows->first_position + slice.offset;
    std::vector<int32_t> own(first, first + slice.count);
    const drift_tensor_t embedded =
        p.workspace->get("aux0." + std::to_string(parts.size()), DRIFT_DTYPE_F32, {slice.count, width});
    drift_tensor_t embed{};
    if (!p.host.model_weight("model.embed_tokens.weight", embed)) fail("aux layer 0 needs the target's embedding");
    p.host.embedding(embed, own, embedded);
    parts.push_back(embedded);
  }
  p.host.concat(parts, out);
}

// The sequences of this forward the plugin drafts for, with their draft KV lined up. One the
// draft KV pool cannot hold (never, with the pool the memory plan sizes, unless the engine's
// pages are shared more than it assumes) goes on without the plugin: its row fails.
std::vector<Pending> pending_requests(Plugin& p, drift_forward_rows_t* const* rows, size_t n) {
  std::vector<Pending> pending;
  for (size_t i = 0; i < n; ++i) {
    auto it = p.requests.find(rows[i]->seq_id);
    if (it == p.requests.end() || rows[i]->num_rows <= 0) continue;
    Request& r = *it->second;
    // Positions the target never ran (a cached prefix) or a gap: the draft starts afresh here.
    if (rows[i]->first_position != r.cache.end_position()) r.cache.restart(rows[i]->first_position);
    Pending s{&r, rows[i], p.host.sequence_tokens(rows[i]->seq_id)};
    if (rows[i]->first_position + rows[i]->num_rows >= static_cast<int64_t>(s.tokens.size()))
      fail("a forward row of sequence " + std::to_string(rows[i]->seq_id) + " has no next token");
    if (!r.cache.reserve(rows[i]->num_rows)) {  // once for all its windows
      p.host.log(DRIFT_LOG_WARN, "eagle3: the draft KV pool has " + std::to_string(p.kv_pool->free_pages()) +
                                     " free pages, too few for sequence " + std::to_string(rows[i]->seq_id) +
                                     "'s next " + std::to_string(rows[i]->num_rows) + " positions");
      rows[i]->status = DRIFT_ERROR_OUT_OF_MEMORY;
      p.requests.erase(it);
      continue;
    }
    pending.push_back(std::move(s));
  }
  return pending;
}

// The pending rows cut into windows of at most `limit` rows, in order: a long prefill's rows span
// several windows, each run after the previous one's KV is committed (causal, so the same rows).
std::vector<std::vector<Slice>> windows(std::vector<Pending>& pending, int64_t limit) {
  std::vector<std::vector<Slice>> out(1);
  int64_t used = 0;
  for (Pending& s : pending)
    for (int64_t offset = 0; offset < s.rows->num_rows;) {
      if (used == limit) {
        out.emplace_back();
        used = 0;
      }
      const int64_t count = std::min(s.rows->num_rows - offset, limit - used);
      out.back().push_back({&s, offset, count});
      offset += count;
      used += count;
    }
  return out;
}

// One window's head forward; commits its rows to the draft KV and returns y [rows, H].
drift_tensor_t extend_window(Plugin& p, const std::vector<Slice>& window) {
  int64_t total = 0;
  for (const Slice& slice : window) total += slice.count;
  const drift_tensor_t aux =
      p.workspace->get("ext.aux", DRIFT_DTYPE_F32, {total, 3 * p.head->config().target_hidden_size});
  DraftBatch b;
  int64_t row = 0;
  for (const Slice& slice : window) {
    const Pending& s = *slice.seq;
    gather_aux(p, slice, rows(aux, row, slice.count));
    const int64_t first = s.rows->first_position + slice.offset;
    for (int64_t j = 0; j < slice.count; ++j) {
      b.tokens.push_back(s.tokens[first + j + 1]);
      b.positions.push_back(static_cast<int32_t>(first + j));
    }
    b.seqs.push_back({&s.request->cache, row, slice.count, s.request->cache.length(), false, {}});
    row += slice.count;
  }
  b.h = p.head->fuse_hidden(aux, *p.workspace, "ext");
  const drift_tensor_t y = p.head->forward(b, *p.workspace, "ext");
  for (const Slice& slice : window) slice.seq->request->cache.commit(slice.count);
  return y;
}

// A sequence whose last row precedes its last committed token can draft now: its root.
bool reaches_root(const Pending& s) {
  return s.rows->first_position + s.rows->num_rows + 1 == static_cast<int64_t>(s.tokens.size());
}

// The roots' first draft candidates, from their rows' outputs gathered into p.root_y (in pending
// order) window by window.
void prepare_roots(Plugin& p, int64_t step, const std::vector<Request*>& ready) {
  const auto m = static_cast<int64_t>(ready.size());
  std::vector<int32_t> all(m);
  for (int64_t i = 0; i < m; ++i) all[i] = static_cast<int32_t>(i);
  std::vector<float> logits;
  const TopK top = p.head->top_k(p.root_y, all, TreeSearch(p.settings.shape, 1).root_width(), *p.workspace,
                                 p.settings.keep_logits ? &logits : nullptr);
  const int64_t vocab = p.head->draft_vocab();
  for (int64_t i = 0; i < m; ++i) {
    Request& r = *ready[i];
    r.root_step = step;
    r.root_row = i;
    r.root_tokens.assign(top.tokens.begin() + i * top.k, top.tokens.begin() + (i + 1) * top.k);
    r.root_probs.assign(top.probs.begin() + i * top.k, top.probs.begin() + (i + 1) * top.k);
    if (p.settings.keep_logits) {
      r.logits.assign(logits.begin() + i * vocab, logits.begin() + (i + 1) * vocab);
      r.logit_rows = 1;
    }
  }
}

}  // namespace

void extend_requests(Plugin& p, int64_t step, drift_forward_rows_t* const* rows, size_t n) {
  std::vector<Pending> pending = pending_requests(p, rows, n);
  if (pending.empty()) return;
  std::vector<Request*> ready;
  for (const Pending& s : pending)
    if (reaches_root(s)) ready.push_back(s.request);
  if (!ready.empty())
    p.root_y = p.workspace->get("root.y", p.host.activation_dtype(),
                                {static_cast<int64_t>(ready.size()), p.head->config().hidden_size});
  int64_t roots = 0;
  for (const std::vector<Slice>& window : windows(pending, p.settings.extension_rows)) {
    const drift_tensor_t y = extend_window(p, window);
    std::vector<int32_t> last_rows;  // of the window's roots, in order
    int64_t row = 0;
    for (const Slice& slice : window) {
      row += slice.count;
      if (slice.ends_sequence() && reaches_root(*slice.seq)) {
        last_rows.push_back(static_cast<int32_t>(row - 1));
        slice.seq->request->root_position = slice.seq->rows->first_position + slice.seq->rows->num_rows;
      }
    }
    if (last_rows.empty()) continue;
    const auto count = static_cast<int64_t>(last_rows.size());
    p.host.embedding(y, last_rows, drift::plugin::rows(p.root_y, roots, count));  // a row gather
    roots += count;
  }
  if (!ready.empty()) prepare_roots(p, step, ready);
}

}  // namespace eagle3
