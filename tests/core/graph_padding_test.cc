// ModelRunner::pad_for_graph: a small forward padded to its recording size computes the same
// logits for its real rows and writes no KV for the padding (CPU backend, golden llama-tiny).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/cpu_backend.h"
#include "core/model/model_config.h"
#include "core/model/model_runner.h"
#include "core/model/model_weights.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kPages = 8, kBlock = 4;

// Prefill of a 3-token prompt and a 2-token chain verified under a tree mask: 5 tokens, 2
// sequences, 3 logit rows; padding takes it to 8 tokens.
ForwardBatch sample_batch() {
  ForwardBatch b;
  b.tokens = {1, 17, 42, 5, 9};
  b.positions = {0, 1, 2, 0, 1};
  AttentionMetadata& a = b.attention;
  a.token_seq = {0, 0, 0, 1, 1};
  a.kv_len = {1, 2, 3, 1, 2};
  a.slots = {0, 1, 2, 4, 5};
  a.block_tables = {{0}, {1}};
  a.mask_words = 1;
  a.mask_start = {100, 100, 100, 0, 0};
  a.mask = {0, 0, 0, 0b01, 0b11};
  b.logit_rows = {2, 3, 4};
  return b;
}

TEST(GraphPaddingTest, PaddedForwardKeepsRealRowsAndWritesNoPaddingKv) {
  const std::string dir = test::test_data_path("golden/llama-tiny");
  ASSERT_FALSE(dir.empty());
  const ModelConfig model = load_model_config(dir);
  CpuBackend backend;
  ModelRunner plain(model, load_model_weights(dir, model, backend), backend, kPages, kBlock);
  ModelRunner padded(model, load_model_weights(dir, model, backend), backend, kPages, kBlock);

  const ForwardBatch batch = sample_batch();
  const ForwardBatch big = ModelRunner::pad_for_graph(batch);
  ASSERT_EQ(big.num_tokens(), 8);
  EXPECT_EQ(big.logit_rows.size(), 8u);
  EXPECT_EQ(big.attention.block_tables.size(), 8u);
  EXPECT_EQ(big.attention.mask.size(), 8u);
  EXPECT_TRUE(std::all_of(big.attention.slots.begin() + 5, big.attention.slots.end(), [](int64_t s) { return s < 0; }));

  const Tensor expected = plain.forward(batch);
  const Tensor got = padded.forward(big);
  ASSERT_EQ(got.dim(0), 8);
  for (int64_t i = 0; i < expected.numel(); ++i)
    ASSERT_NEAR(got.as<float>()[i], expected.as<float>()[i], 1e-5f) << "logit " << i;
  // The KV of the real tokens is the same, every other slot is untouched.
  for (size_t l = 0; l < plain.kv_layers().size(); ++l) {
    const Tensor& k0 = plain.kv_layers()[l].k;
    const Tensor& k1 = padded.kv_layers()[l].k;
    for (int64_t i = 0; i < k0.numel(); ++i) ASSERT_FLOAT_EQ(k1.as<float>()[i], k0.as<float>()[i]) << "layer " << l;
  }
}

}  // namespace
}  // namespace drift
