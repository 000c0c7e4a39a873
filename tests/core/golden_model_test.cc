// The CPU reference backend against Hugging Face transformers: teacher-forced logits within the
// golden README's tolerance at every position, and greedy generation equal to HF's wherever the
// golden top-2 margin makes the choice unambiguous — alone, all cases batched together with
// chunked prefill, and under KV pressure that forces preemption and recompute.
#include <gtest/gtest.h>


#include "core/engine.h"
#include "support/golden.h"
#include "support/test_data.h"

namespace drift {
namespace {

struct GoldenModel {
  const char* dir;  // under the test data folder
};

EngineConfig config_for(const std::string& dir, int64_t token_budget, int64_t num_pages, const char* policy,
                        int64_t block_size = 16) {
  EngineConfig config;
  config.model.path = dir;
  config.engine.max_num_tokens = token_budget;
  config.engine.max_batch_size = 16;
  config.engine.check_kv_integrity = true;  // every step of every run below
  config.kv_cache.block_size = block_size;
  config.kv_cache.num_pages = num_pages;
  config.scheduler.policy = policy;
  return config;
}

// Runs every case as a greedy request (no EOS stop, as HF generate was run) in one batch.
std::vector<std::vector<int32_t>> generate_all(Engine& engine, const std::vector<test::GoldenCase>& cases) {
  std::vector<int64_t> ids;
  for (const auto& c : cases) {
    SamplingParams p;
    p.max_new_tokens = static_cast<int64_t>(c.output.size());
    p.ignore_eos = true;
    ids.push_back(engine.add_request(c.prompt, p));
  }
  while (engine.has_unfinished()) engine.step();
  std::vector<std::vector<int32_t>> outputs;
  for (int64_t id : ids) {
    EXPECT_EQ(engine.request(id).finish_reason, FinishReason::Length) << engine.request(id).error;
    outputs.push_back(engine.request(id).output);
  }
  return outputs;
}

// Each output against the golden rule (support/golden.h); after a legitimate divergence the engine's
// own teacher-forced scoring checks the rest.
void expect_greedy_matches(Engine& engine, const std::vector<test::GoldenCase>& cases,
                           const std::vector<std::vector<int32_t>>& outs) {
  ASSERT_EQ(cases.size(), outs.size());
  auto score_own = [&engine](const std::vector<int32_t>& seq) { return engine.score(seq); };
  for (size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(test::greedy_mismatch(cases[i], outs[i], score_own), "") << "case " << i;
}

class GoldenModelTest : public ::testing::TestWithParam<GoldenModel> {
 protected:
  void SetUp() override {
    dir_ = test::test_data_path(GetParam().dir);
    ASSERT_FALSE(dir_.empty());
    cases_ = test::load_golden_cases(dir_);
    ASSERT_FALSE(cases_.empty());
  }
  std::string dir_;
  std::vector<test::GoldenCase> cases_;
};

TEST_P(GoldenModelTest, TeacherForcedLogitsWithinTolerance) {
  auto engine = Engine::from_config(config_for(dir_, 64, 64, "guaranteed_no_evict"));
  double worst = 0.0;
  for (const auto& c : cases_) {
    Tensor ours = engine->score(c.sequence());
    const double err = test::max_relative_logit_error(test::first_rows(ours, c.logits.dim(0)), c.logits);
    worst = std::max(worst, err);
    EXPECT_LE(err, 1e-3) << "prompt length " << c.prompt.size();
  }
  RecordProperty("max_relative_logit_error", std::to_string(worst));
  std::printf("[golden] %s max relative logit error %.3g\n", GetParam().dir, worst);
  EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages());
}

TEST_P(GoldenModelTest, GreedyAloneMatchesTransformers) {
  for (const auto& c : cases_) {
    auto engine = Engine::from_config(config_for(dir_, 512, 64, "guaranteed_no_evict"));
    expect_greedy_matches(*engine, {c}, generate_all(*engine, {c}));
  }
}

TEST_P(GoldenModelTest, GreedyBatchedWithChunkedPrefillMatches) {
  auto engine = Engine::from_config(config_for(dir_, 24, 128, "guaranteed_no_evict"));
  expect_greedy_matches(*engine, cases_, generate_all(*engine, cases_));
  EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages());
}

TEST_P(GoldenModelTest, GreedyUnderPreemptionMatches) {
  // Small pages and a pool that holds the longest case alone (plus the admission watermark): the
  // shorter cases are admitted together and run out of pages while decoding, so requests are
  // preempted with generated tokens and recompute them.
  constexpr int64_t kBlock = 4;
  int64_t longest = 0, all_at_once = 0;
  for (const auto& c : cases_) {
    const auto len = static_cast<int64_t>(c.prompt.size() + c.output.size());
    longest = std::max(longest, len);
    all_at_once += (len + kBlock - 1) / kBlock;
  }
  const int64_t tight_pages = (longest + kBlock - 1) / kBlock + 2;
  auto tight = Engine::from_config(config_for(dir_, 64, tight_pages, "max_utilization", kBlock));
  const auto preempted_outputs = generate_all(*tight, cases_);
  expect_greedy_matches(*tight, cases_, preempted_outputs);
  EXPECT_GT(tight->metrics().decode_preemptions, 0) << "no request was preempted mid-decode";
  EXPECT_EQ(tight->kv().num_free_pages(), tight->kv().num_pages());

  // The same engine with room for everything: no preemption, and bit-identical tokens.
  auto roomy = Engine::from_config(config_for(dir_, 64, all_at_once, "max_utilization", kBlock));
  EXPECT_EQ(generate_all(*roomy, cases_), preempted_outputs);
  EXPECT_EQ(roomy->metrics().preemptions, 0);
  std::printf("[golden] %s: %ld preemptions (%ld mid-decode) in %ld pages\n", GetParam().dir,
              static_cast<long>(tight->metrics().preemptions), static_cast<long>(tight->metrics().decode_preemptions),
              static_cast<long>(tight_pages));
}

void PrintTo(const GoldenModel& model, std::ostream* os) { *os << model.dir; }

INSTANTIATE_TEST_SUITE_P(Models, GoldenModelTest,
                         ::testing::Values(GoldenModel{"golden/llama-tiny"}, GoldenModel{"golden/qwen2-tiny"},
                                           GoldenModel{"golden/qwen3-tiny"}, GoldenModel{"golden/gptoss-tiny"},
                                           GoldenModel{"golden/gptoss-tiny-mxfp4"}, GoldenModel{"models/stories260K"}),
                         [](const auto& info) {
                           std::string name = info.param.dir;
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace drift
