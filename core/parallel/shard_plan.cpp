#include "core/parallel/shard_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace drift {

std::string check_tensor_parallel_size(const ModelConfig& model, int64_t size) {
  if (size < 1) return fmt::format("tensor_parallel_size = {} must be at least 1", size);
  if (size == 1) return "";
  if (model.num_heads % size != 0)
    return fmt::format("tensor_parallel_size = {} does not divide the model's num_attention_heads = {}", size,
                       model.num_heads);
  const int64_t kv = model.num_kv_heads;
  if (kv >= size ? kv % size != 0 : size % kv != 0)
    return fmt::format(
        "tensor_parallel_size = {} and the model's num_key_value_heads = {}: one must divide the other (KV heads "
        "are split over the ranks, or replicated when there are fewer than ranks)",
        size, kv);
  if (model.intermediate_size % size != 0)
    return fmt::format("tensor_parallel_size = {} does not divide the model's intermediate_size = {}", size,
                       model.intermediate_size);
  if (model.vocab_size < size)
    return fmt::format("tensor_parallel_size = {} is more than the model's vocab_size = {}", size, model.vocab_size);
  if (std::any_of(model.layers.begin(), model.layers.end(), [](const LayerSpec& l) { return l.moe; }))
    return fmt::format(
        "tensor_parallel_size = {}: the {} model's mixture-of-experts layers are not split over ranks yet", size,
        architecture_name(model.arch));
  return "";
}

ShardPlan ShardPlan::whole(const ModelConfig& model) { return for_rank(model, 0, 1); }

ShardPlan ShardPlan::for_rank(const ModelConfig& model, int rank, int size) {
  if (const std::string why = check_tensor_parallel_size(model, size); !why.empty()) fail("{}", why);
  DRIFT_CHECK(rank >= 0 && rank < size, "rank {} of {}", rank, size);
  ShardPlan s;
  s.rank = rank;
  s.size = size;
  s.heads = model.num_heads / size;
  s.first_head = rank * s.heads;
  if (model.num_kv_heads >= size) {
    s.kv_heads = model.num_kv_heads / size;
    s.first_kv_head = rank * s.kv_heads;
  } else {  // each KV head on size / num_kv_heads consecutive ranks: the ones holding its query heads
    s.kv_heads = 1;
    s.first_kv_head = rank / (size / model.num_kv_heads);
  }
  s.intermediate = model.intermediate_size / size;
  s.first_intermediate = rank * s.intermediate;
  // Rows per rank rounded up: the last ranks may hold fewer (none, for a vocabulary smaller than
  // the ranks), so any vocabulary size splits.
  const int64_t per_rank = (model.vocab_size + size - 1) / size;
  s.first_vocab = std::min<int64_t>(model.vocab_size, rank * per_rank);
  s.vocab = std::min<int64_t>(model.vocab_size, s.first_vocab + per_rank) - s.first_vocab;
  return s;
}

ModelConfig local_model_config(const ModelConfig& model, const ShardPlan& shard) {
  ModelConfig local = model;
  local.num_heads = shard.heads;
  local.num_kv_heads = shard.kv_heads;
  local.intermediate_size = shard.intermediate;
  return local;
}

}  // namespace drift
