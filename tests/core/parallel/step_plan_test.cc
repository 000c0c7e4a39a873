// The step plan's encoding: what rank 0 sends is what the other ranks run (every field of a
// forward batch, page copies and slot moves), and bytes that are not a step are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/parallel/step_plan.h"
#include "support/drift_error_matchers.h"

namespace drift {
namespace {

AttentionMetadata attention(int salt) {
  AttentionMetadata a;
  a.token_seq = {0, 0, 1 + salt};
  a.kv_len = {5, 6, 2};
  a.slots = {17, 18, -1};
  a.block_tables = {{1, 2}, {}, {3 + salt}};
  a.tables_per_seq = 1;
  a.mask_start = {0, 4, 1};
  a.mask = {0x5ull, 0xffffffffffffffffull, 1ull << 63};
  a.mask_words = 1;
  return a;
}

void expect_equal(const AttentionMetadata& a, const AttentionMetadata& b) {
  EXPECT_EQ(a.token_seq, b.token_seq);
  EXPECT_EQ(a.kv_len, b.kv_len);
  EXPECT_EQ(a.slots, b.slots);
  EXPECT_EQ(a.block_tables, b.block_tables);
  EXPECT_EQ(a.tables_per_seq, b.tables_per_seq);
  EXPECT_EQ(a.mask_start, b.mask_start);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.mask_words, b.mask_words);
}

TEST(StepPlan, AForwardArrivesWhole) {
  ForwardBatch b;
  b.tokens = {5, 9, 300};
  b.positions = {4, 5, 1};
  b.attention = attention(0);
  b.window_attention = attention(7);
  b.logit_rows = {1, 2};
  b.layer_attention = {attention(1), attention(2)};
  b.query_rows = {2};
  const StepPlanItem got = decode_step(encode_forward(b));
  ASSERT_EQ(got.command, StepCommand::kForward);
  EXPECT_EQ(got.batch.tokens, b.tokens);
  EXPECT_EQ(got.batch.positions, b.positions);
  expect_equal(got.batch.attention, b.attention);
  expect_equal(got.batch.window_attention, b.window_attention);
  EXPECT_EQ(got.batch.logit_rows, b.logit_rows);
  ASSERT_EQ(got.batch.layer_attention.size(), 2u);
  expect_equal(got.batch.layer_attention[1], b.layer_attention[1]);
  EXPECT_EQ(got.batch.query_rows, b.query_rows);
}

TEST(StepPlan, PageCopiesSlotMovesAndShutdown) {
  StepPlanItem copy = decode_step(encode_page_copy(StepCommand::kCopyWindowPage, 3, 11));
  EXPECT_EQ(copy.command, StepCommand::kCopyWindowPage);
  EXPECT_EQ(copy.src_page, 3);
  EXPECT_EQ(copy.dst_page, 11);
  const std::vector<int64_t> src = {40, 41, 47}, dst = {33, 34, 35};
  StepPlanItem move = decode_step(encode_slot_moves(StepCommand::kMoveSlots, src, dst));
  EXPECT_EQ(move.command, StepCommand::kMoveSlots);
  EXPECT_EQ(move.src_slots, src);
  EXPECT_EQ(move.dst_slots, dst);
  EXPECT_EQ(decode_step(encode_shutdown()).command, StepCommand::kShutdown);
}

TEST(StepPlan, BytesThatAreNotAStepAreRefused) {
  ForwardBatch b;
  b.tokens = {1, 2};
  std::vector<uint8_t> bytes = encode_forward(b);
  std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 3);
  EXPECT_DRIFT_ERROR(decode_step(cut), "truncated");
  bytes.push_back(0);
  EXPECT_DRIFT_ERROR(decode_step(bytes), "bytes past its end");
  EXPECT_DRIFT_ERROR(decode_step({42}), "unknown command 42");
  // A length that runs past the message is refused before anything is allocated for it.
  std::vector<uint8_t> huge = {
      static_cast<uint8_t>(StepCommand::kForward), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f};
  EXPECT_DRIFT_ERROR(decode_step(huge), "truncated");
}

TEST(StepPlan, ASetupArrivesWhole) {
  RankSetup s{"/models/x", "cpu", "auto", 3, 8, 2, 16, 1000, 40, 60000, 1};
  const RankSetup got = decode_setup(encode_setup(s));
  EXPECT_EQ(got.model_path, s.model_path);
  EXPECT_EQ(got.backend, s.backend);
  EXPECT_EQ(got.num_threads, 3);
  EXPECT_EQ(got.remote_num_threads, 8);
  EXPECT_EQ(got.local_ranks, 2);
  EXPECT_EQ(got.num_pages, 1000);
  EXPECT_EQ(got.window_pages, 40);
  EXPECT_EQ(got.timeout_ms, 60000);
  EXPECT_EQ(got.log_level, 1);
}

}  // namespace
}  // namespace drift
