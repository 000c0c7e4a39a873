#pragma once
// DraftHead: the EAGLE-3 head's forward, written once against the host's compute services so it
// runs wherever the engine runs (fp32 on the CPU, bf16/fp16 on CUDA). One call processes rows of
// many sequences together (one GEMM per projection); attention runs per sequence over its own
// DraftCache. For a row with input token x, hidden state h and position p:
//   a = cat(rms(embed(x), input_layernorm), rms(h, hidden_norm))          [2H]
//   r = o_proj(attention(rope(q(a)), rope(k(a)), v(a))) + h              (hidden_norm(h) when
//                                                                          norm_before_residual)
//   y = down(silu(gate(n)) * up(n)) + r, n = rms(r, post_attention_layernorm)
//   logits = lm_head(rms(y, norm)) over the draft vocabulary; y feeds the row's children.
#include <cstdint>
#include <string>
#include <vector>

#include "draft_cache.h"
#include "head_config.h"
#include "head_weights.h"
#include "workspace.h"

namespace eagle3 {

// One sequence's rows of a draft forward: batch rows [first_row, first_row + count), written to
// its cache at rows [cache_row, cache_row + count).
struct SeqRows {
  DraftCache* cache = nullptr;
  int64_t first_row = 0;
  int64_t count = 0;
  int64_t cache_row = 0;
  // Committed positions (extension): causal over the cache. Tree rows: every committed row is
  // visible, and mask [count, cache_row + count - cache->length()] says which tree rows are.
  bool tree = false;
  std::vector<uint8_t> mask;
};

struct DraftBatch {
  std::vector<int32_t> tokens;     // each row's input token (a target id)
  drift_tensor_t h{};              // [rows, H]
  std::vector<int32_t> positions;  // each row's position (rotary embedding)
  std::vector<SeqRows> seqs;
};

// The k most likely draft tokens of some rows, as target ids, with their probabilities.
struct TopK {
  int32_t k = 0;
  std::vector<int32_t> tokens;  // [rows * k]
  std::vector<float> probs;     // [rows * k], descending within a row
};

class DraftHead {
 public:
  DraftHead(const Host& host, HeadConfig config, HeadWeights weights);

  const HeadConfig& config() const { return config_; }
  int64_t draft_vocab() const { return config_.draft_vocab_size; }

  // h = fc(aux): aux [rows, 3 * target_H] (F32 or the activation dtype) -> [rows, H].
  drift_tensor_t fuse_hidden(const drift_tensor_t& aux, Workspace& ws, const std::string& tag) const;
  // The layer over the batch; returns y [rows, H] (the workspace's "<tag>.y").
  drift_tensor_t forward(const DraftBatch& batch, Workspace& ws, const std::string& tag) const;
  // Top-k of the draft distribution at rows `which` of y; with `logits`, also each row's draft
  // logits [which.size() * draft_vocab] (inspection).
  TopK top_k(const drift_tensor_t& y, const std::vector<int32_t>& which, int32_t k, Workspace& ws,
             std::vector<float>* logits = nullptr) const;

 private:
  void attend(const DraftBatch& batch, const drift_tensor_t& q, const drift_tensor_t& k, const drift_tensor_t& v,
              drift_tensor_t attn) const;

  const Host& host_;
  HeadConfig config_;
  HeadWeights w_;
};

}  // namespace eagle3
