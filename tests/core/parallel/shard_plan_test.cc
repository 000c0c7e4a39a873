// ShardPlan: which heads, KV heads, MLP columns and vocabulary rows each tensor-parallel rank
// holds. Properties over many shapes (every rank's query heads find their own KV head locally;
// the ranks' ranges partition the model), and errors naming tensor_parallel_size and the model's
// number it cannot split.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/parallel/shard_plan.h"
#include "support/drift_error_matchers.h"

namespace drift {
namespace {

ModelConfig model(int64_t heads, int64_t kv_heads, int64_t intermediate, int64_t vocab) {
  ModelConfig m;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.intermediate_size = intermediate;
  m.vocab_size = vocab;
  m.head_dim = 8;
  m.hidden_size = 8 * heads;
  m.num_layers = 2;
  m.layers.resize(2);
  return m;
}

TEST(ShardPlan, EveryRanksQueryHeadsUseTheirKvHeadLocally) {
  for (int64_t heads : {4, 8, 32, 64})
    for (int64_t kv : {1, 2, 4, 8})
      for (int size : {1, 2, 4, 8}) {
        if (kv > heads || heads % kv != 0) continue;
        const ModelConfig m = model(heads, kv, 64, 1000);
        if (!check_tensor_parallel_size(m, size).empty()) continue;
        std::vector<int> q_owner(heads, -1);
        for (int rank = 0; rank < size; ++rank) {
          const ShardPlan s = ShardPlan::for_rank(m, rank, size);
          ASSERT_EQ(s.heads % s.kv_heads, 0);
          const int64_t local_group = s.heads / s.kv_heads;
          for (int64_t j = 0; j < s.heads; ++j) {
            const int64_t h = s.first_head + j;
            q_owner[h] = rank;
            // The attention kernel pairs local query head j with local KV head j / group: it must
            // be the model's KV head of global head h.
            EXPECT_EQ(s.first_kv_head + j / local_group, h / (heads / kv))
                << heads << " heads, " << kv << " kv heads, rank " << rank << " of " << size;
          }
        }
        for (int64_t h = 0; h < heads; ++h) EXPECT_GE(q_owner[h], 0) << "head " << h << " on no rank";
      }
}

TEST(ShardPlan, RanksPartitionTheMlpAndTheVocabulary) {
  for (int64_t vocab : {7, 512, 1001, 128256})
    for (int size : {1, 2, 3, 4}) {
      const ModelConfig m = model(12, 12, 48, vocab);
      int64_t next_vocab = 0, next_column = 0;
      for (int rank = 0; rank < size; ++rank) {
        const ShardPlan s = ShardPlan::for_rank(m, rank, size);
        EXPECT_EQ(s.first_vocab, next_vocab);
        EXPECT_EQ(s.first_intermediate, next_column);
        next_vocab += s.vocab;
        next_column += s.intermediate;
      }
      EXPECT_EQ(next_vocab, vocab);
      EXPECT_EQ(next_column, 48);
    }
}

TEST(ShardPlan, ASizeThatCannotSplitTheModelNamesBothNumbers) {
  EXPECT_DRIFT_ERROR(ShardPlan::for_rank(model(6, 2, 48, 100), 0, 4),
                     "tensor_parallel_size = 4 does not divide the model's num_attention_heads = 6");
  EXPECT_DRIFT_ERROR(ShardPlan::for_rank(model(12, 3, 48, 100), 0, 2),
                     "tensor_parallel_size = 2 and the model's num_key_value_heads = 3");
  EXPECT_DRIFT_ERROR(ShardPlan::for_rank(model(8, 8, 50, 100), 0, 4),
                     "tensor_parallel_size = 4 does not divide the model's intermediate_size = 50");
  EXPECT_DRIFT_ERROR(ShardPlan::for_rank(model(8, 8, 48, 3), 0, 4), "more than the model's vocab_size = 3");
  ModelConfig moe = model(8, 8, 48, 100);
  moe.layers[1].moe = true;
  EXPECT_DRIFT_ERROR(ShardPlan::for_rank(moe, 0, 2), "mixture-of-experts layers are not split");
  EXPECT_EQ(check_tensor_parallel_size(moe, 1), "");  // one rank runs anything
}

TEST(ShardPlan, ARanksModelHasItsHeadsAndColumns) {
  const ModelConfig m = model(8, 2, 64, 100);
  const ModelConfig local = local_model_config(m, ShardPlan::for_rank(m, 3, 4));
  EXPECT_EQ(local.num_heads, 2);
  EXPECT_EQ(local.num_kv_heads, 1);  // 2 KV heads over 4 ranks: replicated
  EXPECT_EQ(local.intermediate_size, 16);
  EXPECT_EQ(local.vocab_size, 100);  // logits are gathered whole
  EXPECT_EQ(ShardPlan::for_rank(m, 3, 4).first_kv_head, 1);
}

}  // namespace
}  // namespace drift
