// Structured output in the engine, on stories260K: every output follows its grammar (JSON schema,
// regex, choice, GBNF) and ends where the grammar ends; speculation under a grammar -- oracle trees
// full of tokens the grammar forbids, and the ngram provider -- gives the plain output token for
// token, greedy and sampled; and masked sampling draws from the target's distribution renormalized
// over the allowed tokens (one-sample chi-square), with or without speculation (two-sample).
#include <gtest/gtest.h>

#include <cmath>

#include "core/engine.h"
#include "core/grammar/grammar_automaton.h"
#include "core/grammar/structured_output.h"
#include "support/chi_square.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using grammar::StructuredKind;

constexpr int64_t kNewTokens = 160;

EngineConfig base_config() {
  EngineConfig c;
  c.model.path = test::test_data_path("models/stories260K");
  c.engine.max_batch_size = 64;
  c.engine.max_num_tokens = 1024;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 16;
  c.kv_cache.num_pages = 2048;
  return c;
}

const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer"},
    "mood": {"enum": ["happy", "sad", "sleepy"]},
    "friends": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 2}},
  "required": ["name", "mood"]})";

std::vector<std::shared_ptr<const grammar::StructuredOutput>> formats() {
  return {grammar::make_structured_output(StructuredKind::JsonSchema, kSchema),
          grammar::make_structured_output(StructuredKind::Regex, "[A-Z][a-z]{1,8}( [a-z]{1,8}){1,5}\\."),
          grammar::make_structured_output(StructuredKind::Choice, "", {"yes", "no", "once upon a time"}),
          grammar::make_structured_output(StructuredKind::Grammar,
                                          "root ::= item (\", \" item){0,3}\nitem ::= [a-z]+ | [0-9]{1,3}\n"),
          grammar::make_structured_output(StructuredKind::JsonObject, "")};
}

std::vector<std::vector<int32_t>> prompts(const Engine& engine) {
  std::vector<std::vector<int32_t>> out;
  for (const char* text : {"Once upon a time", "Lily liked to", "The dog said", "Tom and Sue went to the park"})
    out.push_back(engine.tokenizer()->encode_prompt(text));
  return out;
}

SamplingParams constrained(const std::shared_ptr<const grammar::StructuredOutput>& format, double temperature,
                           uint64_t seed = 11) {
  SamplingParams p;
  p.max_new_tokens = kNewTokens;
  p.temperature = temperature;
  p.seed = seed;
  p.structured_output = format;
  return p;
}

std::string output_bytes(const Engine& engine, const std::vector<int32_t>& output) {
  std::string text;
  for (int32_t id : output) text += engine.tokenizer()->token_bytes(id).value_or("");
  return text;
}

TEST(StructuredOutput, EveryOutputFollowsItsGrammarAndEndsWhereItEnds) {
  auto engine = Engine::from_config(base_config());
  const auto all = prompts(*engine);
  int64_t finished = 0, runs_total = 0;
  for (const auto& format : formats()) {
    grammar::GrammarAutomaton reference(*format->grammar);
    for (double temperature : {0.0, 1.0}) {
      const auto runs = test::run_batch(*engine, all, {constrained(format, temperature)});
      for (size_t i = 0; i < runs.size(); ++i) {
        const std::string what = std::string(grammar::structured_kind_name(format->kind)) + ", prompt " +
                                 std::to_string(i) + ", temperature " + std::to_string(temperature);
        ASSERT_TRUE(runs[i].error.empty()) << what << ": " << runs[i].error;
        const std::string text = output_bytes(*engine, runs[i].output);
        EXPECT_EQ(runs[i].text, text) << what;
        ++runs_total;
        if (runs[i].finish_reason == FinishReason::Stop) {
          EXPECT_TRUE(reference.matches(text)) << what << ": " << text;
          ++finished;
        } else {  // out of tokens: what is there must still lead into the grammar
          EXPECT_NE(reference.advance(reference.start(), text), grammar::GrammarAutomaton::kDead)
              << what << ": " << text;
        }
      }
    }
  }
  EXPECT_GT(finished, runs_total * 3 / 4);
  EXPECT_GT(engine->metrics().masked_rows, 0);
}

// Masks computed ahead on worker threads (and each new grammar explored from its compilation on,
// by default) are the masks the engine thread would compute: the outputs, greedy and sampled, are
// the same with and without workers.
TEST(StructuredOutput, MaskWorkersChangeNoOutput) {
  EngineConfig none = base_config(), three = base_config();
  none.engine.grammar_threads = 0;
  three.engine.grammar_threads = 3;
  auto plain = Engine::from_config(none), ahead = Engine::from_config(three);
  const auto all = prompts(*plain);
  for (const auto& format : formats())
    for (double temperature : {0.0, 1.0}) {
      const auto expected = test::run_batch(*plain, all, {constrained(format, temperature)});
      const auto runs = test::run_batch(*ahead, all, {constrained(format, temperature)});
      for (size_t i = 0; i < all.size(); ++i)
        EXPECT_EQ(runs[i].output, expected[i].output)
            << grammar::structured_kind_name(format->kind) << ", prompt " << i << ", temperature " << temperature;
    }
}

TEST(StructuredOutput, SchemasAreCompiledOnceAndRefusedWithTheirReason) {
  const auto a = grammar::make_structured_output(StructuredKind::JsonSchema, kSchema);
  const auto b = grammar::make_structured_output(StructuredKind::JsonSchema, kSchema);
  EXPECT_EQ(a->grammar, b->grammar);  // the cache's
  EXPECT_EQ(b->compile_seconds, 0.0);
  try {
    grammar::make_structured_output(StructuredKind::JsonSchema, R"({"type": "integer", "minimum": 3})");
    ADD_FAILURE() << "minimum is not compiled, so it must be refused";
  } catch (const grammar::GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("'minimum'"), std::string::npos) << e.what();
  }
}

class ConstrainedSpeculation : public ::testing::Test {
 protected:
  void expect_plain_outputs(const EngineConfig& speculative_config, double temperature, const std::string& what,
                            bool oracle) {
    auto plain = Engine::from_config(base_config());
    const auto all = prompts(*plain);
    for (const auto& format : formats()) {
      const SamplingParams params = constrained(format, temperature);
      const std::vector<test::RunResult> reference = test::run_batch(*plain, all, {params});
      EngineConfig config = speculative_config;
      if (oracle) config = with_oracle(test::write_reference(test::make_temp_dir("constrained"), all, reference));
      auto engine = Engine::from_config(config);
      const std::vector<test::RunResult> runs = test::run_batch(*engine, all, {params});
      int64_t drafted = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(runs[i].output, reference[i].output)
            << what << ", " << grammar::structured_kind_name(format->kind) << ", prompt " << i;
        drafted += runs[i].stats.speculation.draft_tokens;
      }
      if (oracle) {
        EXPECT_GT(drafted, 0) << what << ", " << grammar::structured_kind_name(format->kind) << ": nothing verified";
      }
    }
  }
  static EngineConfig with_oracle(const std::string& file) {
    return test::with_corrupted_oracle_trees(base_config(), file);
  }
  static EngineConfig with_ngram() {  // with mask workers too, against a plain engine without
    EngineConfig c = test::with_ngram_drafts(base_config());
    c.engine.grammar_threads = 2;
    return c;
  }
};

TEST_F(ConstrainedSpeculation, OracleTreesGiveThePlainOutputGreedyAndSampled) {
  expect_plain_outputs({}, 0.0, "oracle trees, greedy", true);
  expect_plain_outputs({}, 1.0, "oracle trees, sampled", true);
}

TEST_F(ConstrainedSpeculation, NgramDraftsGiveThePlainOutputGreedyAndSampled) {
  expect_plain_outputs(with_ngram(), 0.0, "ngram, greedy", false);
  expect_plain_outputs(with_ngram(), 1.0, "ngram, sampled", false);
}

// ---- Distributions ------------------------------------------------------------------------------

constexpr int kRuns = test::sanitized_build() ? 100 : 3000;
constexpr double kSignificance = 1e-3;

// Words of lowercase letters: after "Once upon a time, there was a" the model's favourite (" little")
// starts with a space and is masked out, so the draw is over a renormalized tail.
const char* kWords = "[a-z]{1,12}( [a-z]{1,12}){0,3}";

std::vector<std::vector<int32_t>> sample(Engine& engine, const std::vector<int32_t>& prompt, uint64_t first_seed,
                                         int64_t tokens) {
  const auto format = grammar::make_structured_output(StructuredKind::Regex, kWords);
  std::vector<SamplingParams> params;
  for (int i = 0; i < kRuns; ++i) {
    SamplingParams p = constrained(format, 1.0, first_seed + static_cast<uint64_t>(i));
    p.max_new_tokens = tokens;
    params.push_back(p);
  }
  std::vector<std::vector<int32_t>> out;
  for (const auto& run : test::run_batch(engine, std::vector<std::vector<int32_t>>(kRuns, prompt), params))
    out.push_back(run.output);
  return out;
}

TEST(StructuredOutputSampling, TheFirstTokenIsDrawnFromTheMaskedTargetDistribution) {
  auto engine = Engine::from_config(base_config());
  const auto prompt = engine->tokenizer()->encode_prompt("Once upon a time, there was a");
  const Tensor logits = engine->score(prompt);
  const int64_t vocab = logits.dim(1);
  const float* row = logits.as<float>() + (static_cast<int64_t>(prompt.size()) - 1) * vocab;
  grammar::GrammarAutomaton words(*grammar::make_structured_output(StructuredKind::Regex, kWords)->grammar);
  std::map<int32_t, double> expected;
  double total = 0.0, max_logit = -INFINITY;
  for (int32_t t = 0; t < vocab; ++t) max_logit = std::max(max_logit, static_cast<double>(row[t]));
  for (int32_t t = 0; t < vocab; ++t) {
    const auto bytes = engine->tokenizer()->token_bytes(t);
    if (!bytes || bytes->empty() || words.advance(words.start(), *bytes) == grammar::GrammarAutomaton::kDead) continue;
    expected[t] = std::exp(static_cast<double>(row[t]) - max_logit);
    total += expected[t];
  }
  for (auto& [t, p] : expected) p /= total;
  ASSERT_GT(expected.size(), 20u);
  std::map<int32_t, int64_t> counts;
  for (const auto& output : sample(*engine, prompt, 1, 1)) counts[output.at(0)]++;
  const test::ChiSquare fit = test::one_sample_chi_square(counts, expected);
  std::printf("[chi-square] masked first token: chi2 %.2f dof %ld p %.3g\n", fit.statistic, static_cast<long>(fit.dof),
              fit.p_value);
  if (!test::sanitized_build()) {
    EXPECT_GT(fit.p_value, kSignificance);
  }
  // The test can fail: the unmasked distribution is rejected.
  std::map<int32_t, double> unmasked;
  double all = 0.0;
  for (int32_t t = 0; t < vocab; ++t) all += std::exp(static_cast<double>(row[t]) - max_logit);
  for (int32_t t = 0; t < vocab; ++t) unmasked[t] = std::exp(static_cast<double>(row[t]) - max_logit) / all;
  EXPECT_LT(test::one_sample_chi_square(counts, unmasked).p_value, kSignificance);
}

TEST(StructuredOutputSampling, SpeculationUnderAGrammarSamplesAsPlainDecodingDoes) {
  auto plain = Engine::from_config(base_config());
  const auto prompt = plain->tokenizer()->encode_prompt("Once upon a time, there was a");
  constexpr int64_t kTokens = 3;
  const auto reference = sample(*plain, prompt, 1, kTokens);
  // A fixed tree holding the likeliest constrained tokens at positions 1 and 2 and tokens the
  // grammar forbids (" little", spaces, digits) beside them.
  std::map<int32_t, int64_t> first, second;
  for (const auto& o : reference) {
    if (o.size() > 1) first[o[1]]++;
    if (o.size() > 2) second[o[2]]++;
  }
  auto top = [](const std::map<int32_t, int64_t>& f, size_t n) {
    std::vector<std::pair<int64_t, int32_t>> order;
    for (const auto& [t, c] : f) order.emplace_back(-c, t);
    std::sort(order.begin(), order.end());
    std::vector<int32_t> out;
    for (size_t i = 0; i < n && i < order.size(); ++i) out.push_back(order[i].second);
    return out;
  };
  std::vector<int32_t> level1 = top(first, 3), level2 = top(second, 2);
  for (const char* forbidden : {" little", "1"})
    for (int32_t t : plain->tokenizer()->encode(forbidden))
      if (std::find(level1.begin(), level1.end(), t) == level1.end()) level1.push_back(t);
  std::string fixed;
  for (size_t i = 0; i < level1.size(); ++i) fixed += (i ? "," : "") + std::to_string(level1[i]);
  fixed += "|";
  for (size_t i = 0; i < level2.size(); ++i) fixed += (i ? "," : "") + std::to_string(level2[i]);
  EngineConfig c = base_config();
  PluginEntry oracle;
  oracle.name = "fixed";
  oracle.path = test::oracle_plugin();
  oracle.settings_toml = "fixed = \"" + fixed + "\"\n";
  c.plugins = {oracle};
  auto speculative =
      Engine::from_config(test::with_speculation(c, "fixed", static_cast<int64_t>(level1.size() + level2.size())));
  const auto runs = sample(*speculative, prompt, 1'000'000, kTokens);
  std::map<std::vector<int32_t>, int64_t> a, b;
  for (const auto& o : reference) a[o]++;
  for (const auto& o : runs) b[o]++;
  const test::ChiSquare joint = test::two_sample_chi_square(a, b);
  std::printf("[chi-square] constrained plain vs speculative: chi2 %.2f dof %ld p %.3g\n", joint.statistic,
              static_cast<long>(joint.dof), joint.p_value);
  EXPECT_GT(speculative->metrics().speculation.draft_tokens, 0);
  if (!test::sanitized_build()) {
    EXPECT_GT(joint.p_value, kSignificance);
    EXPECT_GT(speculative->metrics().speculation.accepted_tokens, kRuns / 10);
  }
}

}  // namespace
}  // namespace drift
