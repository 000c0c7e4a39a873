// After each target forward: the draft KV follows the committed positions. For position p the
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
  int64_t first_row = 0;              // in the batch
};

// The rows' aux hidden states, [n, 3 * target_H] F32: the captured layer outputs, or for aux
// layer 0 (the embeddings) the rows' own tokens embedded.
void gather_aux(Plugin& p, const Pending& s, drift_tensor_t out) {
  const drift_seq_id_t seq = s.rows->seq_id;
  const int64_t n = s.rows->num_rows, width = p.head->config().target_hidden_size;
  std::vector<drift_tensor_t> parts;
  for (int32_t id : p.head->config().aux_layer_ids) {
    if (id > 0) {
      const drift_tensor_t hidden = p.host.hidden_states(seq, id - 1);
      if (hidden.ndim != 2 || hidden.shape[0] != n || hidden.shape[1] != width)
        fail("the host gave hidden states of shape [" + std::to_string(hidden.shape[0]) + ", " +
             std::to_string(hidden.shape[1]) + "] for " + std::to_string(n) + " rows");
      parts.push_back(hidden);
      continue;
    }
    std::vector<int32_t> own(s.tokens.begin() + s.rows->first_position, s.tokens.begin() + s.rows->first_position + n);
    const drift_tensor_t embedded =
        p.workspace.get("aux0." + std::to_string(parts.size()), DRIFT_DTYPE_F32, {n, width});
    drift_tensor_t embed{};
    if (!p.host.model_weight("model.embed_tokens.weight", embed)) fail("aux layer 0 needs the target's embedding");
    p.host.embedding(embed, own, embedded);
    parts.push_back(embedded);
  }
  p.host.concat(parts, out);
}

// The sequences of this forward the plugin drafts for, with their draft KV lined up.
std::vector<Pending> pending_requests(Plugin& p, drift_forward_rows_t* const* rows, size_t n) {
  std::vector<Pending> pending;
  int64_t first_row = 0;
  for (size_t i = 0; i < n; ++i) {
    auto it = p.requests.find(rows[i]->seq_id);
    if (it == p.requests.end() || rows[i]->num_rows <= 0) continue;
    Request& r = *it->second;
    // Positions the target never ran (a cached prefix) or a gap: the draft starts afresh here.
    if (rows[i]->first_position != r.cache.end_position()) r.cache.restart(rows[i]->first_position);
    Pending s{&r, rows[i], p.host.sequence_tokens(rows[i]->seq_id), first_row};
    if (rows[i]->first_position + rows[i]->num_rows >= static_cast<int64_t>(s.tokens.size()))
      fail("a forward row of sequence " + std::to_string(rows[i]->seq_id) + " has no next token");
    first_row += rows[i]->num_rows;
    pending.push_back(std::move(s));
  }
  return pending;
}

DraftBatch extension_batch(Plugin& p, std::vector<Pending>& pending, int64_t total) {
  const drift_tensor_t aux =
      p.workspace.get("ext.aux", DRIFT_DTYPE_F32, {total, 3 * p.head->config().target_hidden_size});
  DraftBatch b;
  for (Pending& s : pending) {
    const int64_t n = s.rows->num_rows, first = s.rows->first_position;
    gather_aux(p, s, rows(aux, s.first_row, n));
    for (int64_t j = 0; j < n; ++j) {
      b.tokens.push_back(s.tokens[first + j + 1]);
      b.positions.push_back(static_cast<int32_t>(first + j));
    }
    s.request->cache.reserve(n);
    b.seqs.push_back({&s.request->cache, s.first_row, n, s.request->cache.length(), false, {}});
  }
  b.h = p.head->fuse_hidden(aux, p.workspace, "ext");
  return b;
}

// Sequences whose last row precedes their last committed token can draft now: their root.
void prepare_roots(Plugin& p, int64_t step, const std::vector<Pending>& pending, const drift_tensor_t& y) {
  std::vector<Request*> ready;
  std::vector<int32_t> last_rows;
  for (const Pending& s : pending) {
    const int64_t last = s.rows->first_position + s.rows->num_rows - 1;
    if (last + 2 != static_cast<int64_t>(s.tokens.size())) continue;  // still in prefill
    s.request->root_position = last + 1;
    ready.push_back(s.request);
    last_rows.push_back(static_cast<int32_t>(s.first_row + s.rows->num_rows - 1));
  }
  if (ready.empty()) return;
  const auto m = static_cast<int64_t>(ready.size());
  p.root_y = p.workspace.get("root.y", p.host.activation_dtype(), {m, p.head->config().hidden_size});
  p.host.embedding(y, last_rows, p.root_y);  // a row gather
  std::vector<float> logits;
  const TopK top = p.head->top_k(y, last_rows, TreeSearch(p.settings.shape, 1).root_width(), p.workspace,
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
  const int64_t total = pending.back().first_row + pending.back().rows->num_rows;
  const DraftBatch batch = extension_batch(p, pending, total);
  const drift_tensor_t y = p.head->forward(batch, p.workspace, "ext");
  for (const Pending& s : pending) s.request->cache.commit(s.rows->num_rows);
  prepare_roots(p, step, pending, y);
}

}  // namespace eagle3
