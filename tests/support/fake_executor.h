#pragma once
// FakeExecutor: a ModelExecutor with no weights for scheduler/engine tests. It stores each
// token in its KV slot and predicts the next token as a hash of everything it can read back
// through the block table — so any KV bookkeeping bug (wrong slot, page shared or freed too
// early, bad rewind or recompute) changes the output, which tests compare with
// `reference_continuation`, computed from the true token sequence.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/forward_batch.h"
#include "core/model/model_config.h"
#include "core/tensor.h"

namespace drift::test {

class FakeExecutor final : public ModelExecutor {
 public:
  FakeExecutor(int64_t vocab, int64_t num_pages, int64_t block_size)
      : vocab_(vocab), block_size_(block_size), slots_(num_pages * block_size, -1) {}

  static int32_t next_token(const std::vector<int32_t>& seq, int64_t vocab) {
    uint64_t h = 1469598103934665603ull;
    for (int32_t t : seq) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
    // Mixed before the modulo: the low bits of h alone depend only on the low bits of the
    // tokens, and a continuation would fall into a short cycle (a KV bug could then go unseen).
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return static_cast<int32_t>(h % static_cast<uint64_t>(vocab));
  }
  static std::vector<int32_t> reference_continuation(std::vector<int32_t> seq, int64_t n, int64_t vocab) {
    std::vector<int32_t> out;
    for (int64_t i = 0; i < n; ++i) {
      out.push_back(next_token(seq, vocab));
      seq.push_back(out.back());
    }
    return out;
  }

  // A small model description to hand plugins (host->model_info) beside a FakeExecutor.
  static ModelConfig model_config(int64_t vocab) {
    ModelConfig m;
    m.vocab_size = vocab;
    m.hidden_size = 8;
    m.intermediate_size = 8;
    m.num_layers = 2;
    m.num_heads = 2;
    m.num_kv_heads = 2;
    m.head_dim = 4;
    m.max_position_embeddings = 4096;
    return m;
  }

  int64_t vocab_size() const override { return vocab_; }
  void copy_page(int32_t src, int32_t dst) override {
    for (int64_t i = 0; i < block_size_; ++i) slots_[dst * block_size_ + i] = slots_[src * block_size_ + i];
  }

  Tensor forward(const ForwardBatch& batch) override {
    batch_sizes.push_back(batch.num_tokens());
    capture(batch);
    const auto& a = batch.attention;
    for (int64_t t = 0; t < batch.num_tokens(); ++t) slots_[a.slots[t]] = batch.tokens[t];
    Tensor logits = Tensor::zeros({static_cast<int64_t>(batch.logit_rows.size()), vocab_});
    for (size_t r = 0; r < batch.logit_rows.size(); ++r) {
      const int32_t t = batch.logit_rows[r];
      const auto& table = a.block_tables[a.token_seq[t]];
      std::vector<int32_t> seen;
      for (int32_t pos = 0; pos < a.kv_len[t]; ++pos)
        if (visible(a, t, pos)) seen.push_back(slots_[table[pos / block_size_] * block_size_ + pos % block_size_]);
      logits.as<float>()[r * vocab_ + next_token(seen, vocab_)] = 1.0f;
    }
    return logits;
  }

  void move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) override {
    for (size_t i = 0; i < src.size(); ++i) slots_[dst[i]] = slots_[src[i]];
  }

  // "Hidden states" of the captured layers: each forward token's id, one column, so a plugin can
  // tell which token a row belongs to.
  void set_capture_layers(std::vector<int32_t> layers) override { capture_layers_ = std::move(layers); }
  const Tensor* captured(int32_t layer) const override {
    return std::find(capture_layers_.begin(), capture_layers_.end(), layer) == capture_layers_.end() ? nullptr
                                                                                                     : &captured_;
  }
  void reorder_captured(const std::vector<int32_t>& rows) override {
    Tensor reordered = Tensor::zeros({static_cast<int64_t>(rows.size()), 1});
    for (size_t i = 0; i < rows.size(); ++i) reordered.as<float>()[i] = captured_.as<float>()[rows[i]];
    captured_ = std::move(reordered);
  }

  std::vector<int64_t> batch_sizes;

 private:
  void capture(const ForwardBatch& batch) {
    if (capture_layers_.empty()) return;
    captured_ = Tensor::zeros({batch.num_tokens(), 1});
    for (int64_t t = 0; t < batch.num_tokens(); ++t) captured_.as<float>()[t] = static_cast<float>(batch.tokens[t]);
  }

  // The tree mask, as the attention kernels read it (kernels/cpu/paged_attention.h).
  static bool visible(const AttentionMetadata& a, int64_t t, int32_t pos) {
    if (a.mask.empty() || pos < a.mask_start[t]) return true;
    const int64_t bit = pos - a.mask_start[t];
    return bit < a.mask_words * 64 && ((a.mask[t * a.mask_words + bit / 64] >> (bit % 64)) & 1u);
  }

  int64_t vocab_, block_size_;
  std::vector<int32_t> slots_;
  std::vector<int32_t> capture_layers_;
  Tensor captured_;
};

}  // namespace drift::test
