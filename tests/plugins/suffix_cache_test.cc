// The suffix_cache draft provider (SuffixDecoding) through the engine on the CPU backend:
//  - lossless: chain and tree drafts give exactly the plain engine's tokens on every golden model
//    and stories260K -- batched, with preemption, and with the prefix cache on;
//  - acceptance rises on repetition: the same prompts ten times in one engine, the global tree
//    of earlier responses drafting them;
//  - the global tree keeps at most max_cached_requests responses;
//  - hybrid drafting with eagle3 ([speculative] fallback_provider): both providers draft, the
//    output stays exact, the metrics say which drafted;
//  - bad settings are load errors naming the key.
#include <fstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine.h"
#include "core/error.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using Tokens = std::vector<int32_t>;
using ::testing::HasSubstr;

PluginEntry suffix_entry(const std::string& settings, const std::string& name = "suffix_cache") {
  PluginEntry e;
  e.name = name;
  e.path = "";
  e.settings_toml = settings;
  if (name != "suffix_cache") e.path = test::plugin_build_dir() + "/libdrift_suffix_cache.so";
  return e;
}

EngineConfig base_config(const std::string& model) {
  EngineConfig c;
  c.model.path = test::test_data_path(model);
  c.engine.max_batch_size = 8;
  c.engine.max_num_tokens = 64;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 4;
  c.kv_cache.num_pages = 512;
  return c;
}

SamplingParams greedy(int64_t n) { return test::greedy_ignoring_eos(n); }

using test::outputs_of;

// The model's golden prompts, each also repeated (the repeats give the request's own tree matches).
std::vector<Tokens> prompts_for(const std::string& dir) {
  std::vector<Tokens> prompts;
  for (const auto& c : test::load_golden_cases(dir)) prompts.push_back(c.prompt);
  const size_t n = prompts.size();
  for (size_t i = 0; i < n; ++i) {
    Tokens p = prompts[i];
    p.insert(p.end(), prompts[i].begin(), prompts[i].end());
    prompts.push_back(p);
  }
  return prompts;
}

struct LosslessCase {
  const char* model;
  const char* draft;  // "chain" or "tree"
};

class SuffixCacheLossless : public ::testing::TestWithParam<LosslessCase> {};

TEST_P(SuffixCacheLossless, OutputsEqualPlainBatchedPreemptedAndCached) {
  const LosslessCase& c = GetParam();
  const std::string dir = test::test_data_path(c.model);
  const std::vector<Tokens> prompts = prompts_for(dir);
  const auto params = greedy(32);
  EngineConfig plain_config = base_config(c.model);
  const std::vector<Tokens> plain = outputs_of(test::run_batch(*Engine::from_config(plain_config), prompts, {params}));
  const std::string settings = fmt::format("draft = \"{}\"\nmin_token_prob = 0.05\n", c.draft);
  // A pool just larger than the largest request: max_utilization must preempt.
  size_t longest = 0;
  for (const Tokens& p : prompts) longest = std::max(longest, p.size());
  const auto tight_pages = static_cast<int64_t>((longest + 32 + 3) / 4 + 2);
  struct Variant {
    const char* what;
    std::function<void(EngineConfig&)> edit;
  };
  const Variant variants[] = {
      {"batched", [](EngineConfig&) {}},
      {"preempted (max_utilization, a tight pool)",
       [&](EngineConfig& e) {
         e.scheduler.policy = "max_utilization";
         e.kv_cache.num_pages = tight_pages;
         e.engine.max_num_tokens = 1024;  // whole prompts at once: the batch fills the pool, then grows
       }},
      {"with the prefix cache", [](EngineConfig& e) { e.plugins.push_back(test::prefix_cache_entry()); }},
  };
  for (const Variant& v : variants) {
    EngineConfig config = base_config(c.model);
    config.plugins = {suffix_entry(settings)};
    v.edit(config);
    auto engine = Engine::from_config(test::with_speculation(config, "suffix_cache", 12));
    // Twice: the second round drafts from the first round's responses too.
    for (int round = 0; round < 2; ++round) {
      const auto runs = test::run_batch(*engine, prompts, {params});
      for (const auto& r : runs) EXPECT_EQ(r.error, "") << v.what << ", round " << round;
      EXPECT_EQ(outputs_of(runs), plain) << v.what << ", round " << round;
    }
    EXPECT_GT(engine->metrics().speculation.accepted_tokens, 50) << v.what;
    if (config.scheduler.policy == "max_utilization") {
      EXPECT_GT(engine->metrics().preemptions, 0) << "the pool did not force preemption";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SuffixCacheLossless,
    ::testing::Values(LosslessCase{"models/stories260K", "chain"}, LosslessCase{"models/stories260K", "tree"},
                      LosslessCase{"golden/llama-tiny", "chain"}, LosslessCase{"golden/llama-tiny", "tree"},
                      LosslessCase{"golden/qwen2-tiny", "tree"}, LosslessCase{"golden/qwen3-tiny", "tree"}),
    [](const auto& info) {
      std::string name = std::string(info.param.model) + "_" + info.param.draft;
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

std::vector<Tokens> story_prompts() {
  std::ifstream in(test::test_data_path("models/stories260K-eagle3") + "/golden_speculative.json");
  return nlohmann::json::parse(in).at("prompts").get<std::vector<Tokens>>();
}

// SuffixDecoding's premise: a workload that repeats itself (agents, retries) is drafted from
// the responses already seen. The same 16 prompts ten times in one engine: the first pass has
// only each request's own text to draft from; later passes find the earlier responses.
TEST(SuffixCache, AcceptanceRisesOnRepetition) {
  const std::vector<Tokens> prompts = story_prompts();
  EngineConfig config = base_config("models/stories260K");
  config.kv_cache.block_size = 16;
  config.plugins = {suffix_entry("")};
  auto engine = Engine::from_config(test::with_speculation(config, "suffix_cache", 16));
  std::vector<double> tau, rate;
  SpeculationStats before = engine->metrics().speculation;
  for (int pass = 0; pass < 10; ++pass) {
    test::run_batch(*engine, prompts, {greedy(64)});
    const SpeculationStats& now = engine->metrics().speculation;
    const double steps = static_cast<double>(now.decode_steps - before.decode_steps);
    tau.push_back(static_cast<double>(now.decode_tokens - before.decode_tokens) / steps);
    rate.push_back(static_cast<double>(now.accepted_tokens - before.accepted_tokens) /
                   static_cast<double>(now.draft_tokens - before.draft_tokens));
    before = now;
    std::printf("[ metric ] suffix_cache repetition pass %d: acceptance length %.3f, acceptance rate %.3f\n", pass + 1,
                tau.back(), rate.back());
  }
  EXPECT_GT(tau[1], tau[0] + 1.0) << "the second pass drafts from the first pass's responses";
  for (size_t i = 1; i < tau.size(); ++i) EXPECT_GE(tau[i], tau[i - 1] - 0.1) << "pass " << i + 1;
  EXPECT_GT(rate.back(), 0.8);
  const auto stats = nlohmann::json::parse(engine->plugin_stats().at("suffix_cache"));
  EXPECT_GT(stats.at("drafts_from_global_tree").get<int64_t>(), 0);
  EXPECT_EQ(stats.at("global_requests").get<int64_t>(), 160);
}

TEST(SuffixCache, GlobalTreeKeepsTheNewestResponses) {
  const std::vector<Tokens> prompts = story_prompts();
  EngineConfig config = base_config("models/stories260K");
  config.plugins = {suffix_entry("max_cached_requests = 3\n")};
  auto engine = Engine::from_config(test::with_speculation(config, "suffix_cache", 8));
  test::run_one_by_one(*engine, {prompts.begin(), prompts.begin() + 7}, greedy(16));
  const auto stats = nlohmann::json::parse(engine->plugin_stats().at("suffix_cache"));
  EXPECT_EQ(stats.at("global_requests").get<int64_t>(), 3);
  EXPECT_EQ(stats.at("evicted_requests").get<int64_t>(), 4);
  EXPECT_GT(stats.at("update_us_per_token").get<double>(), 0.0);
}

// Requests that do not draft with it stay out of its trees: "off" runs of the prompts must not
// hand a later speculative run their answers (drift bench runs "off" first, same prompts).
TEST(SuffixCache, RequestsItDoesNotDraftForStayOutOfItsTrees) {
  const std::vector<Tokens> prompts = story_prompts();
  EngineConfig config = base_config("models/stories260K");
  config.plugins = {suffix_entry("")};
  auto engine = Engine::from_config(test::with_speculation(config, "suffix_cache", 8));
  SamplingParams off = greedy(16);
  off.speculative = "off";
  test::run_one_by_one(*engine, prompts, off);
  auto stats = nlohmann::json::parse(engine->plugin_stats().at("suffix_cache"));
  EXPECT_EQ(stats.at("updated_tokens").get<int64_t>(), 0);
  EXPECT_EQ(stats.at("global_requests").get<int64_t>(), 0);
  test::run_one_by_one(*engine, {prompts.front()}, greedy(16));
  stats = nlohmann::json::parse(engine->plugin_stats().at("suffix_cache"));
  EXPECT_EQ(stats.at("global_requests").get<int64_t>(), 1);
}

// Hybrid: suffix drafts where the text repeats, EAGLE-3 where it does not (a suffix tree that
// expects fewer than 1.5 accepted tokens hands the step to eagle3).
TEST(SuffixCache, HybridWithEagle3DraftsFromBothAndStaysExact) {
  const std::vector<Tokens> prompts = story_prompts();
  EngineConfig config = base_config("models/stories260K");
  config.kv_cache.block_size = 16;
  PluginEntry eagle3;
  eagle3.name = "eagle3";
  eagle3.settings_toml = "checkpoint = " + nlohmann::json(test::test_data_path("models/stories260K-eagle3")).dump() +
                         "\ntree = \"chain\"\ndepth = 4\n";
  config.plugins = {suffix_entry(""), eagle3};
  config = test::with_speculation(config, "suffix_cache", 8);
  config.speculative.fallback_provider = "eagle3";
  config.speculative.fallback_below = 1.5;
  const std::vector<Tokens> plain =
      outputs_of(test::run_batch(*Engine::from_config(base_config("models/stories260K")), prompts, {greedy(48)}));
  auto engine = Engine::from_config(config);
  for (int pass = 0; pass < 2; ++pass) EXPECT_EQ(outputs_of(test::run_batch(*engine, prompts, {greedy(48)})), plain);
  const auto& by = engine->metrics().drafts_by_provider;
  ASSERT_TRUE(by.count("suffix_cache") && by.count("eagle3")) << "both providers drafted";
  EXPECT_GT(by.at("suffix_cache"), 50);
  EXPECT_GT(by.at("eagle3"), 50);
  EXPECT_GT(engine->metrics().speculation.acceptance_length(), 2.5);
}

TEST(SuffixCache, BadSettingsAreLoadErrorsNamingTheKey) {
  auto error = [](const std::string& settings) {
    EngineConfig c = base_config("models/stories260K");
    c.plugins = {suffix_entry(settings)};
    try {
      Engine::from_config(test::with_speculation(c, "suffix_cache", 8));
    } catch (const DriftError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(error("draft = \"bush\""), HasSubstr("setting 'draft' = 'bush' must be \"tree\" or \"chain\""));
  EXPECT_THAT(error("max_depth = 1"), HasSubstr("setting 'max_depth' = 1 must be an integer in 2..256"));
  EXPECT_THAT(error("min_token_prob = 2"), HasSubstr("setting 'min_token_prob' = 2"));
  EXPECT_THAT(error("alpah = 1.0"), HasSubstr("setting 'alpah' is unknown"));
  EngineConfig c = base_config("models/stories260K");
  c.plugins = {suffix_entry("")};
  c = test::with_speculation(c, "suffix_cache", 8);
  c.speculative.fallback_provider = "nope";
  try {
    Engine::from_config(c);
    ADD_FAILURE() << "an unknown fallback provider must stop the engine";
  } catch (const DriftError& e) {
    EXPECT_THAT(e.what(), HasSubstr("fallback_provider = \"nope\" is not configured"));
  }
}

}  // namespace
}  // namespace drift
