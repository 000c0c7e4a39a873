#pragma once
// ForwardBatch: one ragged forward of the target model — prefill chunks, decode tokens and
// (later) tree-verification nodes of many sequences, laid out token by token.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/token_logprobs.h"

namespace drift {

struct ForwardBatch {
  std::vector<int32_t> tokens;       // [T] token ids
  std::vector<int32_t> positions;    // [T] rope positions
  AttentionMetadata attention;       // per-token sequence, visible length, KV slot; block tables
  // With a sliding-window page group (core/kv_window_pages.h): `attention` with the windowed
  // layers' own slots and block tables (-1 for blocks the window has passed); empty otherwise.
  AttentionMetadata window_attention;
  std::vector<int32_t> logit_rows;   // tokens whose next-token logits are returned, in order
  // Partial KV views (core/speculation/kv_view_batch.h): empty, or one attention metadata per layer
  // that layer's attention uses instead of `attention` (whose slots still say where KV is written).
  std::vector<AttentionMetadata> layer_attention;
  // Tokens whose post-RoPE queries every layer keeps (ModelExecutor::captured_queries), in order.
  std::vector<int32_t> query_rows;

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  // Per-layer views and query captures run eagerly, never as a recorded forward graph: a layer's
  // metadata goes up while the layer before it runs, and measured on the H100/H200 that beat
  // uploading all layers' before a replay (SpecPV's partial verify step at 32K: 10.5 ms eager,
  // 10.8 ms replayed).
  bool eager_only() const { return !layer_attention.empty() || !query_rows.empty(); }
};

// What runs a ForwardBatch: the real ModelRunner, or a fake in scheduler tests.
class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;
  virtual int64_t vocab_size() const = 0;
  // Host fp32 logits [logit_rows.size(), vocab].
  virtual Tensor forward(const ForwardBatch& batch) = 0;
  // The token each logit row picks (rows[i] for logit row i; Backend::pick_tokens): a device
  // executor samples where the logits are, so only the picks cross to the host. The default
  // samples the host logits of forward(). `logprobs` (when not null) receives one entry per row:
  // for a row whose params ask for logprobs, its pick's and top tokens' (rows that do not ask
  // get an empty entry); only then do logits come to the host. `before_pick` (when set) runs once
  // the forward is under way and before any row is picked: it may finish `rows` (structured
  // output's masks), on the host while a device computes the forward.
  virtual std::vector<int32_t> forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                             std::vector<TokenLogprobs>* logprobs = nullptr,
                                             const std::function<void()>& before_pick = {});
  // Copies the KV contents of one page to another (copy-on-write support).
  virtual void copy_page(int32_t src, int32_t dst) = 0;
  // Moves the KV of slot src[i] to dst[i], in order (compaction after a verified draft tree).
  virtual void move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) = 0;
  // The same two for the sliding-window layers' page group, when the executor keeps one.
  virtual void copy_window_page(int32_t src, int32_t dst);
  virtual void move_window_slots(std::span<const int64_t> src, std::span<const int64_t> dst);

  // Hidden-state capture for draft providers (EAGLE-3 reads low/mid/high target layers): from
  // the next forward on, keep the output of each listed decoder layer, [num_tokens, hidden], in
  // forward token order, until the forward after. An executor without hidden states (a fake
  // in scheduler tests) captures nothing.
  virtual void set_capture_layers(std::vector<int32_t> /*layers*/) {}
  // The last forward's capture of `layer`, or nullptr when that layer is not captured.
  virtual const Tensor* captured(int32_t /*layer*/) const { return nullptr; }
  // Rearranges the captured rows: row i becomes the old row rows[i] (after a verify step, the
  // accepted nodes' rows move behind their root, as their KV did).
  virtual void reorder_captured(const std::vector<int32_t>& /*rows*/) {}
  // The last forward's post-RoPE queries of its query_rows at `layer`, [rows, heads * head_dim], or
  // nullptr when it kept none (valid until the next forward).
  virtual const Tensor* captured_queries(int32_t /*layer*/) const { return nullptr; }
  // Why this executor can run no more forwards ("" while it can): a tensor-parallel rank failed.
  virtual std::string broken() const { return ""; }
};

// The rows that ask for logprobs, in order.
std::vector<int32_t> rows_wanting_logprobs(std::span<const RowSampling> rows);
// One entry per row: for each row wanting[i], its pick's logprobs from host_logits row i (the
// asking rows gathered), or row wanting[i] itself when `gathered` is false; empty otherwise.
std::vector<TokenLogprobs> rows_logprobs(const Tensor& host_logits, std::span<const int32_t> wanting, bool gathered,
                                         std::span<const RowSampling> rows, std::span<const int32_t> picks);

}  // namespace drift
