#pragma once
// ShardPlan: which part of a model one tensor-parallel rank holds (docs/tensor_parallel.md).
// Attention heads and MLP columns are split over the ranks (column-parallel q/k/v and gate/up,
// row-parallel o and down); the embedding and the LM head are split by vocabulary. A model with
// fewer KV heads than ranks replicates each KV head over tensor_parallel_size / num_kv_heads
// ranks, as vLLM does, so every rank's query heads find their KV head locally.
#include <cstdint>
#include <string>

#include "core/model/model_config.h"

namespace drift {

struct ShardPlan {
  int rank = 0;
  int size = 1;
  int64_t first_head = 0, heads = 0;                 // query heads
  int64_t first_kv_head = 0, kv_heads = 0;           // KV heads (replicated when fewer than ranks)
  int64_t first_intermediate = 0, intermediate = 0;  // MLP columns
  int64_t first_vocab = 0, vocab = 0;                // embedding and LM head rows

  bool parallel() const { return size > 1; }
  // The whole model on one rank.
  static ShardPlan whole(const ModelConfig& model);
  // Rank `rank` of `size`. Throws DriftError naming tensor_parallel_size and the model's number it
  // cannot divide (heads, KV heads, intermediate size), or a layer kind not split yet.
  static ShardPlan for_rank(const ModelConfig& model, int rank, int size);
};

// The checks for_rank makes, without a rank: "" when `size` splits `model`, else why not.
std::string check_tensor_parallel_size(const ModelConfig& model, int64_t size);

// The model as one rank of `shard` computes it: its heads, KV heads and MLP columns (vocab_size
// stays the model's: the rank's logits are gathered into whole rows). Sizes the rank's KV pages.
ModelConfig local_model_config(const ModelConfig& model, const ShardPlan& shard);

}  // namespace drift
