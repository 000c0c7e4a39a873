#pragma once
// ModelRunner: the decoder-only transformer forward (Llama / Mistral / Qwen2 / Qwen3) over a
// ragged batch, with the paged KV cache it owns. Every op goes through the Backend interface.
#include <map>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/forward_batch.h"
#include "core/model/model_config.h"
#include "core/model/model_weights.h"
#include "core/model/rope_frequencies.h"
#include "core/parallel/communicator.h"
#include "core/parallel/shard_plan.h"

namespace drift {

// One tensor-parallel rank's part of the forward (docs/tensor_parallel.md): the weights were loaded
// for `shard`, and `communicator` sums the row-parallel projections' outputs and gathers the
// logits to rank 0.
struct RunnerShard {
  ShardPlan plan;
  Communicator* communicator = nullptr;
};

class ModelRunner final : public ModelExecutor {
 public:
  // `window_pages` > 0: the sliding-window layers keep their KV in a pool of that many pages of
  // their own (core/kv_window_pages.h), addressed by ForwardBatch::window_attention.
  ModelRunner(ModelConfig config, ModelWeights weights, Backend& backend, int64_t num_pages, int64_t block_size,
              int64_t window_pages = 0);
  // A tensor-parallel rank's runner: its heads, KV heads and MLP columns (shard.plan), the whole
  // residual stream. Rank 0's logits are the whole rows; the other ranks' forwards return none.
  ModelRunner(ModelConfig config, ModelWeights weights, Backend& backend, int64_t num_pages, int64_t block_size,
              int64_t window_pages, RunnerShard shard);

  int64_t vocab_size() const override { return config_.vocab_size; }
  Tensor forward(const ForwardBatch& batch) override;
  std::vector<int32_t> forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                     std::vector<TokenLogprobs>* logprobs = nullptr,
                                     const std::function<void()>& before_pick = {}) override;
  void copy_page(int32_t src, int32_t dst) override;
  void move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) override;
  void copy_window_page(int32_t src, int32_t dst) override;
  void move_window_slots(std::span<const int64_t> src, std::span<const int64_t> dst) override;
  void set_capture_layers(std::vector<int32_t> layers) override;
  const Tensor* captured(int32_t layer) const override;
  void reorder_captured(const std::vector<int32_t>& rows) override;
  const Tensor* captured_queries(int32_t layer) const override;

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  Backend& backend() { return backend_; }
  const std::vector<LayerKV>& kv_layers() const { return kv_; }
  // Per layer: whether its KV lives in the sliding-window page group (then kv_layers()[l] is
  // indexed by that group's slots, not the block tables of the main pool).
  const std::vector<bool>& windowed_layers() const { return windowed_; }
  const RopeFrequencies& rope() const { return rope_; }
  // Tensor parallelism: how many forwards' logits met as whole rows and as argmaxes.
  struct LogitGathers {
    int64_t whole = 0, argmax = 0;
  };
  LogitGathers logit_gathers() const { return gathers_; }

  // A recordable forward padded to the next of a few sizes (1, 2, 4, 8, 16, 24, 32 tokens, as many
  // sequences and logit rows), so one recording serves every batch of its size class. Padding
  // tokens write no KV (slot -1) and see nothing (kv_len 0); their logit rows are dropped. Real
  // rows are unchanged: every op is batch-invariant at these sizes.
  static ForwardBatch pad_for_graph(const ForwardBatch& batch);

 private:
  // One forward's temporaries, allocated once and reused by every layer.
  struct LayerScratch {
    Tensor qkv, q, k, v, attn, attn_out, gate_up, act, mlp_out;
    Tensor h;               // the next block's input (NormedRows::normed)
    Tensor square_sums;     // and its sums, when linear_add_residual left it factored
    bool factored = false;  // (it did)
  };
  LayerScratch layer_scratch(int64_t tokens);
  // The layers and the head: device logits [logit_rows, vocab] (empty without logit rows).
  Tensor run_layers(const ForwardBatch& batch);
  // run_layers, or the replay of its recording: `read` gets the device logits before the forward ends.
  template <typename Read>
  auto run_forward(const ForwardBatch& batch, Read read);
  template <typename Read>
  auto run_exact(const ForwardBatch& batch, Read read);
  // Forwards up to this size may be graph-replayed (measured: larger ones, which go through cuBLASLt,
  // ran slower replayed than eager on the H100).
  static constexpr int64_t kMaxGraphTokens = 32;
  // The pre-norm blocks: x (the fp32 residual stream) += block(rms_norm(x) * norm weight), the
  // block's input left in s by the previous block (or the embedding) for norm_weight.
  NormedRows block_input(const Tensor& x, const Tensor& norm_weight, LayerScratch& s) const;
  // x += linear(in) and the next block's input for next_norm.
  void add_to_residual(const Tensor& in, const Tensor& weight, const Tensor& bias, Tensor& delta, Tensor& x,
                       const Tensor& next_norm, LayerScratch& s);
  const Tensor& norm_after_attention(int64_t layer) const;
  const Tensor& norm_after_mlp(int64_t layer) const;
  void attention_block(int64_t layer, const ForwardBatch& batch, Tensor& x, LayerScratch& s);
  void keep_queries(int64_t layer, const ForwardBatch& batch, const Tensor& q);
  void mlp_block(int64_t layer, Tensor& x, LayerScratch& s);
  Tensor scratch(std::vector<int64_t> shape, DType dtype);
  Tensor scratch(std::vector<int64_t> shape);  // in the backend's compute dtype
  // Tensor parallelism: the embedding of this rank's vocabulary rows, summed over the ranks.
  void embed(const std::vector<int32_t>& tokens, Tensor& x);
  // x summed over the ranks, in place (fp32 host tensors: the CPU communicator).
  void all_reduce(Tensor& x);
  // How the ranks' logit columns meet on rank 0, which announces it once it knows what its rows
  // need (after before_pick): whole rows, or each row's largest logit and its token -- all a
  // plain greedy pick needs, a few bytes a row instead of the rank's share of the vocabulary.
  enum class LogitGather : uint8_t { kWhole = 1, kArgmax = 2 };
  void announce(LogitGather how);
  // Another rank: takes part in the gather rank 0 announced.
  void follow_gather(const Tensor& local);
  // The ranks' logit columns as whole rows on rank 0 (empty elsewhere).
  Tensor gather_logits(const Tensor& local);
  // Each row's argmax over the whole vocabulary on rank 0 (the first of equal maxima, as
  // sampler.h's argmax; empty elsewhere).
  std::vector<int32_t> gather_argmax(const Tensor& local);

  ModelConfig config_;
  RunnerShard shard_;
  ModelConfig local_;  // config_ as this rank computes it: its heads, KV heads and MLP columns
  LogitGathers gathers_;
  ModelWeights weights_;
  Backend& backend_;
  RopeFrequencies rope_;
  int64_t block_size_;
  std::vector<LayerKV> kv_;
  std::vector<bool> windowed_;  // per layer: in the sliding-window page group
  // The same tensors by page group, for page copies and slot moves.
  std::vector<LayerKV> full_group_kv_, window_group_kv_;
  // The captured layers' tensors in layer order (a recording's extras), and back after a replay.
  std::vector<Tensor> captures() const;
  void restore_captures(const std::vector<Tensor>& tensors);
  std::map<int32_t, Tensor> captured_;    // layer -> its output in the last forward
  std::vector<Tensor> captured_queries_;  // layer -> the last forward's query_rows' queries (or empty)
};

}  // namespace drift
