// The Speculator on its own, without plugins: what it decides when nothing can draft (requests
// plain, views full, no drafts), how it accepts a verified tree from the picks or a custom rule,
// and what it counts. Drafting through real providers is tested through the engine
// (engine_speculation_test, lossless_*_test, tests/abi/speculation_fallback_test).
#include "core/speculation/speculator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drift {
namespace {

class SpeculatorTest : public ::testing::Test {
 protected:
  SpeculatorTest()
      : kv_(16, 4),
        speculator_(options(), 64, kv_,
                    SpeculatorMetrics{totals_, histogram_, by_provider_, verification_, timing_, budgets_, retired_}) {}

  static SpeculationOptions options() {
    SpeculationOptions o;
    o.max_draft_tokens = 4;
    return o;
  }

  // A sequence decoding after a 3-token prompt and 2 output tokens.
  Sequence decoding(std::string speculative = "") {
    Sequence seq;
    seq.id = 7;
    seq.prompt = {1, 2, 3};
    seq.output = {4, 5};
    seq.params.speculative = std::move(speculative);
    seq.num_computed = 4;
    return seq;
  }

  KVCacheManager kv_;
  SpeculationStats totals_;
  std::map<int32_t, int64_t> histogram_;
  std::map<std::string, int64_t> by_provider_;
  VerificationMetrics verification_;
  DraftTiming timing_;
  std::map<int32_t, int64_t> budgets_;
  int64_t retired_ = 0;
  Speculator speculator_;
};

TEST_F(SpeculatorTest, WithoutPluginsNothingDraftsAndEveryViewIsFull) {
  Sequence seq = decoding();
  EXPECT_EQ(speculator_.check_request(seq), "");
  EXPECT_EQ(speculator_.check_request(decoding("off")), "");
  EXPECT_THAT(speculator_.check_request(decoding("ngram")),
              ::testing::HasSubstr("speculative = \"ngram\" is not a configured draft provider"));
  speculator_.start(seq);
  EXPECT_FALSE(seq.speculate);
  EXPECT_EQ(seq.draft_room, 0);

  SchedulerOutput scheduled;
  scheduled.chunks.push_back({&seq, 4, 3, true, DraftTree({6, 7}, {-1, 0})});
  EXPECT_TRUE(speculator_.choose_views(0, scheduled).empty()) << "empty: every chunk attends fully";
  std::vector<Sequence*> running = {&seq};
  speculator_.draft_next(1, running);
  EXPECT_TRUE(seq.draft.empty());
  EXPECT_EQ(timing_.propose_calls, 0);
}

TEST_F(SpeculatorTest, AcceptsTheLongestPathOfPicksThenTheBonusToken) {
  Sequence seq = decoding();
  const ScheduledChunk chunk{&seq, 4, 4, true, DraftTree({6, 7, 8}, {-1, 0, -1})};
  // Rows: root, node 0, node 1, node 2. The root's pick is node 0's token, node 0's node 1's.
  const std::vector<int32_t> picks = {6, 7, 9, 3};
  const AcceptedPath path = speculator_.accept(chunk, picks, nullptr, 32);
  EXPECT_EQ(path.nodes, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(path.tokens, (std::vector<int32_t>{6, 7, 9}));
  const ScheduledChunk plain{&seq, 4, 1, true, {}};
  EXPECT_EQ(speculator_.accept(plain, std::vector<int32_t>{11}, nullptr, 32).tokens, (std::vector<int32_t>{11}));
}

TEST_F(SpeculatorTest, ACustomRuleReadsTheChunksLogits) {
  EXPECT_FALSE(speculator_.needs_logits());
  const float* seen = nullptr;
  speculator_.set_acceptance_rule(
      [&](const DraftTree&, const float* logits, int64_t, const SamplingParams&, uint64_t, uint64_t) {
        seen = logits;
        return AcceptedPath{{}, {42}};
      });
  EXPECT_TRUE(speculator_.needs_logits());
  Sequence seq = decoding();
  const std::vector<float> logits(2 * 32);
  const AcceptedPath path = speculator_.accept({&seq, 4, 2, true, DraftTree({6}, {-1})}, {}, logits.data(), 32);
  EXPECT_EQ(seen, logits.data());
  EXPECT_EQ(path.tokens, (std::vector<int32_t>{42}));
}

TEST_F(SpeculatorTest, CountsDraftedAcceptedRewoundAndDraftProbabilities) {
  Sequence seq = decoding();
  const DraftTree draft({6, 7, 8}, {-1, 0, 1}, {0.5f, 0.25f, 1.0f});
  const std::vector<int32_t> accepted = {0, 1};
  speculator_.record_commit(seq, draft, accepted, 3, true);
  for (const SpeculationStats* s : {&seq.stats.speculation, &totals_}) {
    EXPECT_EQ(s->draft_tokens, 3);
    EXPECT_EQ(s->accepted_tokens, 2);
    EXPECT_EQ(s->rewound_tokens, 1);
    EXPECT_EQ(s->verify_steps, 1);
    EXPECT_EQ(s->decode_steps, 1);
    EXPECT_EQ(s->decode_tokens, 3);
    EXPECT_DOUBLE_EQ(s->mean_draft_prob(), 1.75 / 3);
    EXPECT_DOUBLE_EQ(s->mean_accepted_draft_prob(), 0.75 / 2);
  }
  EXPECT_EQ(seq.stats.speculation.committed_per_step, (std::vector<int32_t>{3}));
  EXPECT_EQ(histogram_, (std::map<int32_t, int64_t>{{3, 1}}));

  speculator_.record_commit(seq, {}, {}, 1, false);  // the prompt's last chunk: not a decode step
  EXPECT_EQ(seq.stats.speculation.decode_steps, 1);
  EXPECT_EQ(seq.stats.speculation.committed_per_step, (std::vector<int32_t>{3, 1}));
  EXPECT_EQ(histogram_.size(), 1u);
}

TEST_F(SpeculatorTest, AStepVerifyingATreeWithoutAViewCountsAsFull) {
  Sequence seq = decoding();
  SchedulerOutput scheduled;
  scheduled.chunks.push_back({&seq, 4, 1, true, {}});
  speculator_.record_verification({}, scheduled, 0.5);
  EXPECT_EQ(verification_.full_verify_steps, 0) << "no tree: not a verify step";
  scheduled.chunks[0] = {&seq, 4, 2, true, DraftTree({6}, {-1})};
  speculator_.record_verification({}, scheduled, 0.5);
  EXPECT_EQ(verification_.full_views, 1);
  EXPECT_EQ(verification_.full_verify_steps, 1);
  EXPECT_DOUBLE_EQ(verification_.full_verify_seconds, 0.5);
}

}  // namespace
}  // namespace drift
