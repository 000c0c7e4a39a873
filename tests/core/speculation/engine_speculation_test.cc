// Speculation through the engine API on stories260K: stop strings cut exactly (across token
// boundaries, inside accepted runs) with and without speculation; one engine compares providers
// per request (off / the default / another); an unknown provider is the request's error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/engine.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

class EngineSpeculationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.model.path = test::test_data_path("models/stories260K");
    config_.engine.check_kv_integrity = true;
    config_.kv_cache.block_size = 8;
    config_.kv_cache.num_pages = 256;
    auto plain = Engine::from_config(config_);
    prompts_ = {plain->tokenizer()->encode_prompt("Once upon a time"),
                plain->tokenizer()->encode_prompt("Tom had a dog")};
    params_.max_new_tokens = 60;
    reference_ = test::run_batch(*plain, prompts_, {params_});
    reference_file_ = test::write_reference(test::make_temp_dir("engine-spec"), prompts_, reference_);
  }

  // ngram (the default provider) and a perfect oracle, both configured.
  std::unique_ptr<Engine> speculative() const {
    EngineConfig c = config_;
    c.plugins = {test::ngram_entry(), test::oracle_entry("oracle", reference_file_, {0.0, 1, 6, 0})};
    return Engine::from_config(test::with_speculation(c, "ngram", 6));
  }

  EngineConfig config_;
  std::vector<std::vector<int32_t>> prompts_;
  SamplingParams params_;
  std::vector<test::RunResult> reference_;
  std::string reference_file_;
};

TEST_F(EngineSpeculationTest, StopStringsCutExactlyWithAndWithoutSpeculation) {
  const std::string& text = reference_[0].text;
  ASSERT_GT(text.size(), 60u);
  auto plain = Engine::from_config(config_);
  auto spec = speculative();
  // Stop strings that begin and end inside tokens, at several places of the text.
  for (size_t begin : {std::size_t{7}, std::size_t{23}, std::size_t{41}}) {
    const std::string stop = text.substr(begin, 6);
    const size_t at = text.find(stop);
    SamplingParams p = params_;
    p.stop = {stop};
    for (const char* mode : {"off", "oracle"}) {
      SCOPED_TRACE(std::string(mode) + ", stop \"" + stop + "\"");
      p.speculative = mode;
      Engine& engine = std::string(mode) == "off" ? *plain : *spec;
      const test::RunResult r = test::run_batch(engine, {prompts_[0]}, {p})[0];
      EXPECT_EQ(r.finish_reason, FinishReason::Stop);
      EXPECT_EQ(r.text, text.substr(0, at)) << "cut exactly before the stop string, which is never emitted";
      EXPECT_EQ(r.streamed_text, r.text);
      EXPECT_EQ(r.streamed, r.output) << "no token past the cut is streamed";
      // The last token is the one that completed the stop string: the reference's, no further.
      ASSERT_LE(r.output.size(), reference_[0].output.size());
      EXPECT_EQ(r.output,
                std::vector<int32_t>(reference_[0].output.begin(), reference_[0].output.begin() + r.output.size()));
      EXPECT_NE(engine.tokenizer()->decode(r.output).find(stop), std::string::npos);
      EXPECT_EQ(engine.tokenizer()->decode({r.output.begin(), r.output.end() - 1}).find(stop), std::string::npos);
    }
  }
  EXPECT_GT(spec->metrics().speculation.accepted_tokens, 0) << "the cuts fell inside accepted runs";
}

TEST_F(EngineSpeculationTest, OneEngineComparesProvidersPerRequest) {
  auto engine = speculative();
  std::vector<SamplingParams> params;
  for (const char* provider : {"off", "", "oracle"}) {
    SamplingParams p = params_;
    p.speculative = provider;
    params.push_back(p);
  }
  for (size_t i = 0; i < prompts_.size(); ++i) {
    const auto runs = test::run_batch(*engine, {prompts_[i], prompts_[i], prompts_[i]}, params);
    for (const auto& r : runs) EXPECT_EQ(r.output, reference_[i].output) << "prompt " << i;
    EXPECT_EQ(runs[0].stats.speculation.draft_tokens, 0) << "off";
    EXPECT_EQ(runs[2].stats.speculation.rewound_tokens, 0) << "a perfect oracle is never wrong";
    EXPECT_GT(runs[2].stats.speculation.acceptance_length(), 3.0);
    EXPECT_LT(runs[2].stats.steps, runs[0].stats.steps) << "fewer target forwards";
  }
}

TEST_F(EngineSpeculationTest, DraftProbabilitiesAreReportedNeverUsed) {
  // A perfect oracle, 3 wide, reporting 0.9 for its true candidates and 0.05 for the others: only
  // true candidates are accepted, so their mean is 0.9; the output is the plain one regardless.
  EngineConfig c = config_;
  PluginEntry oracle = test::oracle_entry("oracle", reference_file_, {0.0, 3, 4, 0});
  oracle.settings_toml += "probs = true\n";
  c.plugins = {oracle};
  auto engine = Engine::from_config(test::with_speculation(c, "oracle", 12));
  const auto runs = test::run_batch(*engine, prompts_, {params_});
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].output, reference_[i].output);
  const SpeculationStats& s = engine->metrics().speculation;
  EXPECT_GT(s.accepted_with_prob, 0);
  EXPECT_NEAR(s.mean_accepted_draft_prob(), 0.9, 1e-6);
  EXPECT_GT(s.nodes_with_prob, s.accepted_with_prob);
  EXPECT_LT(s.mean_draft_prob(), 0.9) << "the rejected siblings' 0.05 pull the mean down";
}

TEST_F(EngineSpeculationTest, AnUnknownProviderIsTheRequestsError) {
  auto engine = speculative();
  SamplingParams p = params_;
  p.speculative = "eagle9";
  const auto r = test::run_batch(*engine, {prompts_[0], prompts_[1]}, {p, params_});
  EXPECT_EQ(r[0].finish_reason, FinishReason::Error);
  EXPECT_THAT(r[0].error, ::testing::HasSubstr("speculative = \"eagle9\" is not a configured draft provider"));
  EXPECT_EQ(r[1].output, reference_[1].output) << "the other request is not affected";
  auto plain = Engine::from_config(config_);
  SamplingParams ngram = params_;
  ngram.speculative = "ngram";
  EXPECT_EQ(test::run_batch(*plain, {prompts_[0]}, {ngram})[0].finish_reason, FinishReason::Error)
      << "an engine without plugins has no providers";
}

}  // namespace
}  // namespace drift
