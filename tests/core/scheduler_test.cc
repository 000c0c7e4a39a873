// Scheduler and capacity policies through the engine loop, with a weightless FakeExecutor whose
// outputs depend on every KV slot it reads (see support/fake_executor.h): admission, preemption
// with exact recompute, the per-step token budget, decode-first, FIFO fairness, batch limits, a
// never-fitting request rejected while others finish, and abort.
#include <gtest/gtest.h>

#include <map>

#include "core/engine.h"
#include "support/fake_executor.h"

namespace drift {
namespace {

constexpr int64_t kVocab = 97;

struct Harness {
  Harness(int64_t pages, int64_t block, const char* policy, int64_t budget, int64_t batch = 64, int64_t max_seq = 4096) {
    EngineOptions o;
    o.num_pages = pages;
    o.block_size = block;
    o.capacity_policy = policy;
    o.limits = {batch, budget, max_seq};
    o.check_kv_integrity = true;
    auto exec = std::make_unique<test::FakeExecutor>(kVocab, pages, block);
    fake = exec.get();
    engine = std::make_unique<Engine>(o, std::move(exec));
  }
  int64_t add(int64_t prompt_len, int64_t new_tokens, int32_t salt = 0) {
    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < prompt_len; ++i) prompt.push_back(static_cast<int32_t>((i * 31 + salt * 7 + 3) % kVocab));
    SamplingParams p;
    p.max_new_tokens = new_tokens;
    const int64_t id = engine->add_request(prompt, p);
    prompts[id] = prompt;
    return id;
  }
  // Steps to completion; records the step at which each request produced its first token and
  // how many output tokens it had each time it was preempted.
  void run(int64_t max_steps = 100000) {
    for (int64_t s = 0; engine->has_unfinished() && s < max_steps; ++s) {
      for (const auto& out : engine->step())
        if (!out.new_tokens.empty() && !first_token_step.count(out.id)) first_token_step[out.id] = s;
      running_history.push_back(static_cast<int64_t>(engine->scheduler().running().size()));
      record_preemptions();
    }
    ASSERT_FALSE(engine->has_unfinished()) << "did not finish within " << max_steps << " steps";
  }
  void record_preemptions() {
    for (const auto& [id, prompt] : prompts) {
      const Sequence& s = engine->request(id);
      auto& at = preempted_at_output[id];
      if (static_cast<int64_t>(at.size()) < s.stats.preemptions) at.push_back(s.output.size());
    }
  }
  void expect_reference_outputs() {
    for (const auto& [id, prompt] : prompts) {
      const Sequence& s = engine->request(id);
      if (s.finish_reason == FinishReason::Error) continue;
      EXPECT_EQ(s.output, test::FakeExecutor::reference_continuation(prompt, s.params.max_new_tokens, kVocab))
          << "request " << id;
    }
  }
  std::unique_ptr<Engine> engine;
  test::FakeExecutor* fake = nullptr;
  std::map<int64_t, std::vector<int32_t>> prompts;
  std::map<int64_t, int64_t> first_token_step;
  std::vector<int64_t> running_history;
  std::map<int64_t, std::vector<size_t>> preempted_at_output;
};

TEST(SchedulerTest, GuaranteedNoEvictAdmitsOnlyWhatFitsAndNeverPreempts) {
  // Each request needs ceil((20 + 12) / 8) = 4 pages worst case; 10 pages hold two at a time.
  Harness h(10, 8, "guaranteed_no_evict", 64);
  for (int i = 0; i < 6; ++i) h.add(20, 12, i);
  h.engine->step();
  EXPECT_EQ(h.engine->scheduler().running().size(), 2u);
  h.run();
  h.expect_reference_outputs();
  EXPECT_EQ(h.engine->metrics().preemptions, 0);
  for (int64_t n : h.running_history) EXPECT_LE(n, 2);
  EXPECT_EQ(h.engine->kv().num_free_pages(), 10);
}

TEST(SchedulerTest, MaxUtilizationPreemptsAndRecomputesExactly) {
  Harness h(12, 4, "max_utilization", 32);
  for (int i = 0; i < 8; ++i) h.add(9 + i, 20, i);
  h.run();
  h.expect_reference_outputs();
  EXPECT_GT(h.engine->metrics().preemptions, 0);
  int64_t recomputed = 0;
  for (const auto& [id, p] : h.prompts) recomputed += h.engine->request(id).stats.recomputed_tokens;
  EXPECT_GT(recomputed, 0);
  EXPECT_EQ(h.engine->kv().num_free_pages(), 12);
}

// Every preemption of a request must come after it produced new tokens since the previous one:
// a request readmitted into a cache it cannot fit, only to be preempted again at the same output,
// is thrashing (recompute with no progress).
void expect_progress_between_preemptions(const Harness& h) {
  for (const auto& [id, at] : h.preempted_at_output)
    for (size_t k = 1; k < at.size(); ++k)
      EXPECT_GT(at[k], at[k - 1]) << "request " << id << " preempted again at " << at[k] << " output tokens";
}

TEST(SchedulerTest, MaxUtilizationDoesNotThrash) {
  struct Scenario {
    int64_t pages, block, budget;
    std::vector<std::pair<int64_t, int64_t>> requests;  // prompt length, new tokens
  };
  // The first is the shape of stories260K's golden cases in a cache that holds one of them: with
  // readmission on a first chunk, request 1 was preempted 26 times at the same 124 tokens.
  const std::vector<Scenario> scenarios = {{16, 16, 64, {{1, 200}, {5, 200}, {15, 200}, {13, 200}}},
                                           {40, 1, 16, {{10, 20}, {10, 20}, {10, 20}}},
                                           {12, 4, 32, {{9, 20}, {10, 20}, {11, 20}, {12, 20}, {13, 20}, {14, 20}}}};
  for (const Scenario& sc : scenarios) {
    SCOPED_TRACE(testing::Message() << sc.pages << " pages of " << sc.block);
    Harness h(sc.pages, sc.block, "max_utilization", sc.budget);
    for (size_t i = 0; i < sc.requests.size(); ++i) h.add(sc.requests[i].first, sc.requests[i].second, static_cast<int32_t>(i));
    h.run();
    h.expect_reference_outputs();
    EXPECT_GT(h.engine->metrics().preemptions, 0) << "the cache was meant to be too small";
    EXPECT_LE(h.engine->metrics().preemptions, 2 * static_cast<int64_t>(sc.requests.size()));
    expect_progress_between_preemptions(h);
  }
}

TEST(SchedulerTest, StepTokenBudgetIsNeverExceededAndPrefillIsChunked) {
  Harness h(256, 16, "guaranteed_no_evict", 7);
  h.add(50, 5, 1);
  h.add(3, 30, 2);
  h.add(23, 9, 3);
  h.run();
  h.expect_reference_outputs();
  for (int64_t n : h.fake->batch_sizes) EXPECT_LE(n, 7);
  // The 50-token prompt needed at least ceil(50 / 7) forwards to prefill.
  EXPECT_GE(h.engine->request(0).stats.steps, 8);
}

TEST(SchedulerTest, DecodeTokensAreScheduledBeforePrefill) {
  // Budget 4: three decoding requests must each get their token every step even while a long
  // prompt is waiting to prefill, which only gets what is left.
  Harness h(256, 16, "guaranteed_no_evict", 4);
  const int64_t a = h.add(2, 40, 1), b = h.add(1, 40, 2), c = h.add(1, 40, 3);
  h.engine->step();  // a, b and c prefill (4 tokens)
  const int64_t late = h.add(60, 2, 4);
  for (int s = 0; s < 20; ++s) {
    auto before_a = h.engine->request(a).output.size();
    auto before_b = h.engine->request(b).output.size();
    auto before_c = h.engine->request(c).output.size();
    h.engine->step();
    EXPECT_EQ(h.engine->request(a).output.size(), before_a + 1);
    EXPECT_EQ(h.engine->request(b).output.size(), before_b + 1);
    EXPECT_EQ(h.engine->request(c).output.size(), before_c + 1);
  }
  EXPECT_GT(h.engine->request(late).num_computed, 0) << "the prefill got the leftover budget";
  h.run();
  h.expect_reference_outputs();
}

TEST(SchedulerTest, FifoAdmissionNobodyStarves) {
  Harness h(16, 8, "guaranteed_no_evict", 16, 3);
  for (int i = 0; i < 12; ++i) h.add(5 + (i % 4) * 9, 6 + (i % 3) * 5, i);
  h.run();
  h.expect_reference_outputs();
  ASSERT_EQ(h.first_token_step.size(), 12u);
  for (int64_t id = 1; id < 12; ++id)  // first tokens arrive in arrival order
    EXPECT_LE(h.first_token_step[id - 1], h.first_token_step[id]) << "request " << id << " overtook " << id - 1;
  for (int64_t n : h.running_history) EXPECT_LE(n, 3) << "max_batch_size exceeded";
}

TEST(SchedulerTest, NeverFittingRequestIsRejectedOthersFinish) {
  for (const char* policy : {"guaranteed_no_evict", "max_utilization"}) {
    Harness h(8, 4, policy, 16);
    const int64_t ok1 = h.add(6, 5, 1);
    const int64_t huge = h.add(30, 10, 2);  // 10 pages worst case > 8 in the pool
    const int64_t ok2 = h.add(4, 7, 3);
    h.run();
    EXPECT_EQ(h.engine->request(huge).finish_reason, FinishReason::Error) << policy;
    EXPECT_NE(h.engine->request(huge).error.find("KV pages"), std::string::npos) << h.engine->request(huge).error;
    EXPECT_EQ(h.engine->request(ok1).finish_reason, FinishReason::Length);
    EXPECT_EQ(h.engine->request(ok2).finish_reason, FinishReason::Length);
    h.expect_reference_outputs();
  }
}

TEST(SchedulerTest, AbortFreesPagesAndLeavesOthersIntact) {
  Harness h(64, 4, "max_utilization", 32);
  const int64_t keep = h.add(10, 25, 1);
  const int64_t gone = h.add(12, 25, 2);
  const int64_t waiting = h.add(8, 5, 3);
  for (int i = 0; i < 5; ++i) h.engine->step();
  h.engine->abort(gone);
  auto outs = h.engine->step();
  bool reported = false;
  for (const auto& o : outs) reported |= o.id == gone && o.finished && o.finish_reason == FinishReason::Abort;
  EXPECT_TRUE(reported);
  h.run();
  EXPECT_EQ(h.engine->request(keep).finish_reason, FinishReason::Length);
  EXPECT_EQ(h.engine->request(waiting).finish_reason, FinishReason::Length);
  h.prompts.erase(gone);
  h.expect_reference_outputs();
  EXPECT_EQ(h.engine->kv().num_free_pages(), 64);
}

TEST(SchedulerTest, RandomisedWorkloadsMatchReferenceUnderBothPolicies) {
  uint64_t state = 42;
  auto rnd = [&](int64_t n) { state = state * 6364136223846793005ull + 1442695040888963407ull; return static_cast<int64_t>((state >> 33) % n); };
  for (int round = 0; round < 20; ++round) {
    const char* policy = round % 2 ? "max_utilization" : "guaranteed_no_evict";
    Harness h(10 + rnd(30), 1 + rnd(8), policy, 1 + rnd(40), 1 + rnd(6));
    const int n = 1 + static_cast<int>(rnd(10));
    for (int i = 0; i < n; ++i) h.add(1 + rnd(30), 1 + rnd(20), i);
    h.run();
    h.expect_reference_outputs();
    EXPECT_EQ(h.engine->kv().num_free_pages(), h.engine->kv().num_pages()) << "round " << round;
  }
}

}  // namespace
}  // namespace drift
