// Logits shaping in the engine (logit_bias, the repetition, frequency and presence penalties,
// min_tokens; core/logit_adjustments.h): greedy outputs equal a reference that shapes
// teacher-forced logits with this file's own arithmetic (vLLM's definitions), and speculation --
// the ngram provider and oracle chains and trees -- gives the plain output token for token,
// greedy and sampled, batched: each draft node is shaped as plain decoding would shape its position.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "core/engine.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kNewTokens = 32;

std::string stories() { return test::test_data_path("models/stories260K"); }

EngineConfig base_config() {
  EngineConfig c;
  c.model.path = stories();
  c.engine.max_batch_size = 8;
  c.engine.max_num_tokens = 256;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 4;
  c.kv_cache.num_pages = 512;
  return c;
}

SamplingParams shaped(double temperature = 0.0) {
  SamplingParams p;
  p.max_new_tokens = kNewTokens;
  p.temperature = temperature;
  p.seed = 7;
  p.repetition_penalty = 1.3;
  p.frequency_penalty = 0.4;
  p.presence_penalty = 0.3;
  p.logit_bias = {{403, 2.5}, {261, -100.0}};
  p.min_tokens = 20;
  return p;
}

// The golden prompts, then pieces of them repeated (something for the ngram provider to match).
std::vector<std::vector<int32_t>> prompts() {
  std::vector<std::vector<int32_t>> out;
  for (const auto& c : test::load_golden_cases(stories())) out.push_back(c.prompt);
  std::mt19937 rng(5);
  for (size_t i = 0; out.size() < 6; ++i) {
    std::vector<int32_t> p = out[i % out.size()];
    p.insert(p.end(), p.begin(), p.begin() + 1 + rng() % p.size());
    out.push_back(p);
  }
  out.resize(6);
  return out;
}

// The shaped logit of `token` after prompt and output, written out from vLLM's definitions.
double reference_logit(double x, int32_t token, const SamplingParams& p, const std::vector<int32_t>& prompt,
                       const std::vector<int32_t>& output, const std::vector<int32_t>& eos) {
  for (const auto& [t, bias] : p.logit_bias)
    if (t == token) x += bias;
  const auto in_output = std::count(output.begin(), output.end(), token);
  const bool seen = in_output > 0 || std::count(prompt.begin(), prompt.end(), token) > 0;
  if (seen) x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
  x -= p.frequency_penalty * static_cast<double>(in_output) + (in_output > 0 ? p.presence_penalty : 0.0);
  const bool held_back = std::count(eos.begin(), eos.end(), token) > 0 ||
                         std::count(p.stop_token_ids.begin(), p.stop_token_ids.end(), token) > 0;
  if (held_back && static_cast<int64_t>(output.size()) < p.min_tokens) x = -1e30;
  return x;
}

// Greedy decoding by hand: each step scores the whole sequence and shapes its last row.
// `margins[i]`: the gap between the best and second-best shaped logits at step i.
std::vector<int32_t> reference_greedy(Engine& engine, const std::vector<int32_t>& prompt, const SamplingParams& p,
                                      std::vector<double>& margins) {
  const std::vector<int32_t>& eos = engine.options().eos_ids;
  std::vector<int32_t> output;
  while (static_cast<int64_t>(output.size()) < p.max_new_tokens) {
    std::vector<int32_t> ids = prompt;
    ids.insert(ids.end(), output.begin(), output.end());
    const Tensor logits = engine.score(ids);
    const int64_t vocab = logits.dim(1);
    const float* row = logits.as<float>() + (static_cast<int64_t>(ids.size()) - 1) * vocab;
    double best = -1e300, second = -1e300;
    int32_t pick = -1;
    for (int32_t t = 0; t < vocab; ++t) {
      const double x = reference_logit(row[t], t, p, prompt, output, eos);
      if (x > best) {
        second = best;
        best = x;
        pick = t;
      } else if (x > second) {
        second = x;
      }
    }
    margins.push_back(best - second);
    output.push_back(pick);
    if (std::count(eos.begin(), eos.end(), pick) > 0) break;
  }
  return output;
}

TEST(LogitsShaping, GreedyOutputsEqualShapingTeacherForcedLogitsByHand) {
  auto engine = Engine::from_config(base_config());
  const std::vector<std::vector<int32_t>> all = prompts();
  const std::vector<test::RunResult> runs = test::run_batch(*engine, all, {shaped()});
  SamplingParams unshaped;
  unshaped.max_new_tokens = kNewTokens;
  const std::vector<test::RunResult> plain = test::run_batch(*engine, all, {unshaped});
  int changed = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    std::vector<double> margins;
    const std::vector<int32_t> expected = reference_greedy(*engine, all[i], shaped(), margins);
    const std::vector<int32_t>& got = runs[i].output;
    size_t same = 0;
    while (same < std::min(got.size(), expected.size()) && got[same] == expected[same]) ++same;
    if (same < std::max(got.size(), expected.size())) {
      ASSERT_LT(same, margins.size());
      EXPECT_LT(margins[same], 1e-3) << "prompt " << i << " diverges from the reference at step " << same;
    }
    // The shaping shows: token 261 is biased out, no EOS before min_tokens, and outputs change.
    EXPECT_EQ(std::count(got.begin(), got.end(), 261), 0) << "prompt " << i;
    EXPECT_GE(got.size(), 20u) << "prompt " << i;
    changed += got != plain[i].output;
  }
  EXPECT_GT(changed, 0);
}

class ShapedSpeculation : public ::testing::Test {
 protected:
  void expect_plain_outputs(const EngineConfig& config, const SamplingParams& params, const std::string& what,
                            bool must_accept) {
    const std::vector<std::vector<int32_t>> all = prompts();
    auto plain = Engine::from_config(base_config());
    const std::vector<test::RunResult> reference = test::run_batch(*plain, all, {params});
    const std::string file = test::write_reference(test::make_temp_dir("shaped"), all, reference);
    auto engine = Engine::from_config(config.plugins.empty() ? with_oracle(file) : config);
    const std::vector<test::RunResult> runs = test::run_batch(*engine, all, {params});
    int64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(runs[i].output, reference[i].output) << what << ", prompt " << i;
      drafted += runs[i].stats.speculation.draft_tokens;
      accepted += runs[i].stats.speculation.accepted_tokens;
    }
    EXPECT_GT(drafted, 0) << what << ": no draft node was verified";
    if (must_accept) {
      EXPECT_GT(accepted, 0) << what << ": no draft token was accepted";
    }
  }
  static EngineConfig with_oracle(const std::string& file) {
    return test::with_corrupted_oracle_trees(base_config(), file);
  }
  static EngineConfig with_ngram() { return test::with_ngram_drafts(base_config()); }
};

TEST_F(ShapedSpeculation, OracleTreesGiveThePlainOutputGreedyAndSampled) {
  expect_plain_outputs(EngineConfig{}, shaped(), "oracle trees, greedy", true);
  expect_plain_outputs(EngineConfig{}, shaped(0.8), "oracle trees, sampled", true);
}

TEST_F(ShapedSpeculation, NgramDraftsGiveThePlainOutputGreedyAndSampled) {
  expect_plain_outputs(with_ngram(), shaped(), "ngram, greedy", false);
  expect_plain_outputs(with_ngram(), shaped(0.8), "ngram, sampled", false);
}

}  // namespace
}  // namespace drift
