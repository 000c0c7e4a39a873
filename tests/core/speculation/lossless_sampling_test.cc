// Lossless speculative SAMPLING, statistically: over thousands of seeded runs on stories260K
// (temperature with top-k, top-p and min-p on), the distribution of the first generated tokens
// under speculation (oracle chains and wide trees whose candidates include the likely tokens)
// matches plain sampling by a two-sample chi-square test at significance 0.001 -- the two arms
// use disjoint seeds, so agreement is statistical, not by construction. The same test must
// REJECT two deliberately broken rules: accepting any drafted child, and drawing the bonus token
// from p without excluding the rejected children.
#include <map>

#include <gtest/gtest.h>

#include "core/engine.h"
#include "core/sampler.h"
#include "support/chi_square.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

// Seeded runs per arm; a smoke run under the sanitizers, which check the code paths, not statistics.
constexpr int kRuns = test::sanitized_build() ? 100 : 3000;
constexpr int64_t kTokens = 4;  // the first four generated tokens
constexpr double kSignificance = 1e-3;

// Broken rule 1: descends into the first child whenever there is one, whatever the target says.
AcceptedPath accept_any_child(const DraftTree& tree, const float* logits, int64_t vocab, const SamplingParams& params,
                              uint64_t seed, uint64_t first) {
  AcceptedPath path;
  int32_t node = -1;
  for (uint64_t index = first;; ++index) {
    int32_t child = -1;
    for (size_t i = 0; i < tree.size() && child < 0; ++i)
      if (tree.parents[i] == node) child = static_cast<int32_t>(i);
    if (child < 0) {
      path.tokens.push_back(sample_token(logits + (node + 1) * vocab, vocab, params, seed, index));
      return path;
    }
    path.nodes.push_back(child);
    path.tokens.push_back(tree.tokens[child]);
    node = child;
  }
}

// Broken rule 2: a rejected draw is replaced by a fresh draw from p, children not excluded.
AcceptedPath bonus_from_unexcluded_p(const DraftTree& tree, const float* logits, int64_t vocab,
                                     const SamplingParams& params, uint64_t seed, uint64_t first) {
  AcceptedPath path;
  int32_t node = -1;
  for (uint64_t index = first;; ++index) {
    const float* row = logits + (node + 1) * vocab;
    const int32_t token = sample_token(row, vocab, params, seed, index);
    const int32_t child = tree.child_with_token(node, token);
    if (child < 0) {
      path.tokens.push_back(sample_token(row, vocab, params, seed ^ 0x9e3779b97f4a7c15ull, index));
      return path;
    }
    path.nodes.push_back(child);
    path.tokens.push_back(token);
    node = child;
  }
}

using test::ChiSquare;
using test::two_sample_chi_square;

class LosslessSamplingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::test_data_path("models/stories260K");
    ASSERT_FALSE(dir_.empty());
    auto plain = Engine::from_config(config());
    // The first token is almost certain (" little"), the next ones are not: the drafts verified
    // from the second token on meet real uncertainty.
    prompt_ = plain->tokenizer()->encode_prompt("Once upon a time, there was a");
  }

  EngineConfig config() const {
    EngineConfig c;
    c.model.path = dir_;
    c.engine.max_batch_size = 256;
    c.engine.max_num_tokens = 4096;
    c.kv_cache.block_size = 16;
    c.kv_cache.num_pages = 1024;
    return c;
  }

  // The first kTokens tokens of kRuns requests seeded first_seed, first_seed + 1, ...
  std::vector<std::vector<int32_t>> sample(Engine& engine, uint64_t first_seed) {
    SamplingParams p;
    // Enough entropy that no token is certain, with every filter active.
    p.temperature = 1.0;
    p.top_k = 50;
    p.top_p = 0.97;
    p.min_p = 0.01;
    p.max_new_tokens = kTokens;
    p.ignore_eos = true;
    std::vector<SamplingParams> params;
    for (int i = 0; i < kRuns; ++i) {
      p.seed = first_seed + static_cast<uint64_t>(i);
      params.push_back(p);
    }
    std::vector<std::vector<int32_t>> outputs;
    for (const auto& run : test::run_batch(engine, std::vector<std::vector<int32_t>>(kRuns, prompt_), params))
      outputs.push_back(run.output);
    return outputs;
  }

  // A draft provider proposing the same tree at every position (the oracle's `fixed` mode): the
  // tokens of level 1 under the root, those of level 2 under the first of them, and so on.
  std::unique_ptr<Engine> speculative(const std::vector<std::vector<int32_t>>& levels,
                                      const AcceptanceRule& rule = accept_draft) {
    EngineConfig c = config();
    PluginEntry oracle;
    oracle.name = "fixed";
    oracle.path = test::oracle_plugin();
    std::string text;
    size_t nodes = 0;
    for (const auto& level : levels) {
      if (!text.empty()) text += "|";
      for (size_t i = 0; i < level.size(); ++i) text += (i ? "," : "") + std::to_string(level[i]);
      nodes += level.size();
    }
    oracle.settings_toml = "fixed = \"" + text + "\"\n";
    c.plugins = {oracle};
    auto engine = Engine::from_config(test::with_speculation(c, "fixed", static_cast<int64_t>(nodes)));
    engine->set_acceptance_rule(rule);
    return engine;
  }

  std::string dir_;
  std::vector<int32_t> prompt_;
};

using Counts = std::map<std::vector<int32_t>, int64_t>;

Counts joint(const std::vector<std::vector<int32_t>>& outputs) {
  Counts c;
  for (const auto& o : outputs) c[o]++;
  return c;
}

Counts at_position(const std::vector<std::vector<int32_t>>& outputs, size_t pos) {
  Counts c;
  for (const auto& o : outputs) c[{o[pos]}]++;
  return c;
}

// The `n` tokens plain sampling produces most often at output position `pos`: likely drafts.
std::vector<int32_t> most_frequent(const std::vector<std::vector<int32_t>>& outputs, size_t pos, size_t n) {
  std::map<int32_t, int64_t> freq;
  for (const auto& o : outputs) freq[o[pos]]++;
  std::vector<std::pair<int64_t, int32_t>> order;
  for (const auto& [t, f] : freq) order.emplace_back(-f, t);
  std::sort(order.begin(), order.end());
  std::vector<int32_t> out;
  for (size_t i = 0; i < n && i < order.size(); ++i) out.push_back(order[i].second);
  return out;
}

// The test: the joint distribution of the first kTokens tokens and each position's marginal,
// plain against speculative; it rejects when any p-value is below kSignificance / (kTokens + 1).
struct Verdict {
  std::vector<ChiSquare> tests;  // joint, then per position
  bool rejects() const {
    for (const ChiSquare& t : tests)
      if (t.p_value < kSignificance / static_cast<double>(tests.size())) return true;
    return false;
  }
  double min_p() const {
    double p = 1;
    for (const ChiSquare& t : tests) p = std::min(p, t.p_value);
    return p;
  }
};

Verdict compare(const std::vector<std::vector<int32_t>>& a, const std::vector<std::vector<int32_t>>& b) {
  Verdict v;
  v.tests.push_back(two_sample_chi_square(joint(a), joint(b)));
  for (size_t pos = 0; pos < static_cast<size_t>(kTokens); ++pos)
    v.tests.push_back(two_sample_chi_square(at_position(a, pos), at_position(b, pos)));
  return v;
}

void report(const char* rule, const char* shape, const Verdict& v) {
  std::printf("[chi-square] %-24s %-10s joint chi2 %7.2f dof %3ld p %.3g; per position:", rule, shape,
              v.tests[0].statistic, static_cast<long>(v.tests[0].dof), v.tests[0].p_value);
  for (size_t i = 1; i < v.tests.size(); ++i)
    std::printf(" chi2 %.2f dof %ld p %.3g;", v.tests[i].statistic, static_cast<long>(v.tests[i].dof),
                v.tests[i].p_value);
  std::printf("\n");
}

TEST_F(LosslessSamplingTest, SpeculativeSamplingMatchesPlainSamplingAndBrokenRulesDoNot) {
  auto plain = Engine::from_config(config());
  const auto reference = sample(*plain, 1);
  struct Shape {
    const char* name;
    std::vector<std::vector<int32_t>> levels;
  };
  // A chain of the likeliest tokens at output positions 1, 2, 3; a tree four wide at position 1
  // and three wide below it.
  const Shape chain{"chain",
                    {most_frequent(reference, 1, 1), most_frequent(reference, 2, 1), most_frequent(reference, 3, 1)}};
  const Shape tree{"wide tree", {most_frequent(reference, 1, 4), most_frequent(reference, 2, 3)}};
  for (const Shape& shape : {chain, tree}) {
    auto correct = speculative(shape.levels);
    const Verdict ok = compare(reference, sample(*correct, 1'000'000));  // seeds disjoint from the plain run's
    report("target-only (correct)", shape.name, ok);
    if (test::sanitized_build()) continue;  // too few runs for the test's power
    EXPECT_FALSE(ok.rejects()) << shape.name << ": min p " << ok.min_p();
    EXPECT_GT(correct->metrics().speculation.accepted_tokens, kRuns / 10) << "the drafts must really be accepted";

    for (const auto& [name, rule] : {std::pair<const char*, AcceptanceRule>{"accept any child", accept_any_child},
                                     {"bonus from unexcluded p", bonus_from_unexcluded_p}}) {
      auto broken = speculative(shape.levels, rule);
      const Verdict bad = compare(reference, sample(*broken, 1'000'000));
      report(name, shape.name, bad);
      EXPECT_TRUE(bad.rejects()) << name << ", " << shape.name << ": min p " << bad.min_p();
    }
  }
}

TEST_F(LosslessSamplingTest, SameSeedGivesTheSameTokensWithOrWithoutSpeculation) {
  auto plain = Engine::from_config(config());
  const auto reference = sample(*plain, 77);
  auto tree = speculative({most_frequent(reference, 1, 4), most_frequent(reference, 2, 3)});
  EXPECT_EQ(sample(*tree, 77), reference) << "the acceptance walk makes the draws plain decoding makes";
}

}  // namespace
}  // namespace drift
