// Speculation fallback (seed 002 B6) through the whole engine on stories260K: a draft provider or
// verification policy that proposes an invalid tree, fails its hook, or overwrites an "in" field
// of drift_draft_tree_t / drift_kv_view_t (one plugin per case, plugins/bad_speculation.c) costs
// the request it concerns its speculation, with ONE [fallback] line naming plugin, request and
// reason. The output is exactly the non-speculative output, the other request keeps speculating,
// and no page leaks. (Overwriting seq_id or max_pages used to crash the engine with SIGSEGV.) A
// plugin whose hook succeeded but whose result was refused is told the request goes on without it
// (on_request_finish ABORT, ABI 1.4), so it can drop the request's state; one that failed the hook
// itself hears nothing more of it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "abi_test_util.h"
#include "core/engine.h"
#include "core/plugin/engine_plugins.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

struct BadCase {
  const char* name;
  const char* path;
  const char* hook;    // in the [fallback] line
  const char* reason;  // a phrase of it
};

EngineConfig base_config() {
  EngineConfig c;
  c.model.path = test::test_data_path("models/stories260K");
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 8;
  c.kv_cache.num_pages = 64;
  return c;
}

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class SpeculationFallbackTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(SpeculationFallbackTest, OneLineThenThePlainOutput) {
  const BadCase& bad = GetParam();
  const std::vector<std::vector<int32_t>> prompts = {{1, 403, 407, 261, 378}, {1, 403, 407, 261, 378, 360, 289}};
  SamplingParams params;
  params.max_new_tokens = 12;
  auto plain = Engine::from_config(base_config());
  const auto reference = test::run_batch(*plain, prompts, {params});

  EngineConfig c = base_config();
  c.plugins = {test::entry("bad", bad.path)};
  c.speculative.verification = "bad";
  c = test::with_speculation(c, "bad", 4);
  test::LogCapture log;
  auto engine = Engine::from_config(c);
  const auto runs = test::run_batch(*engine, prompts, {params});

  ASSERT_EQ(log.fallbacks().size(), 1u) << ::testing::PrintToString(log.fallbacks());
  const std::string line = log.fallbacks()[0];
  EXPECT_THAT(line, ::testing::HasSubstr("plugin 'bad'"));
  EXPECT_THAT(line, ::testing::HasSubstr(bad.hook));
  EXPECT_THAT(line, ::testing::HasSubstr("request 0 continues without it"));
  EXPECT_THAT(line, ::testing::HasSubstr(bad.reason));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(runs[i].output, reference[i].output) << "request " << i;
    EXPECT_EQ(runs[i].finish_reason, reference[i].finish_reason);
  }
  EXPECT_GT(runs[1].stats.speculation.draft_tokens, 0) << "the other request keeps speculating";
  EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages());
  const PluginHost& host = engine->plugins()->host();
  const bool hook_failed = std::string(bad.name) == "hook_fails";
  EXPECT_EQ(test::calls(host, "bad", "on_request_finish(abort)", 0), hook_failed ? 0 : 1);
  EXPECT_EQ(test::calls(host, "bad", "on_request_finish", 0), 0) << "nothing after the fallback";
  EXPECT_EQ(test::calls(host, "bad", "on_request_finish", 1), 1) << "the other request ends as usual";
}

// Hybrid drafting: a request whose [speculative] provider failed it goes on with the configured
// fallback provider's drafts, not without drafts.
TEST(SpeculationFallback, AFailedProviderHandsItsRequestToTheHybridsFallback) {
  const std::vector<std::vector<int32_t>> prompts = {{1, 403, 407, 261, 378, 403, 407, 261, 378}, {1, 403, 407, 261}};
  SamplingParams params;
  params.max_new_tokens = 40;
  auto plain = Engine::from_config(base_config());
  const auto reference = test::run_batch(*plain, prompts, {params});

  EngineConfig c = base_config();
  PluginEntry ngram;
  ngram.name = "ngram";
  ngram.settings_toml = "min_ngram = 1\n";
  c.plugins = {test::entry("bad", DRIFT_ABI_PLUGIN_BAD_HOOK_FAILS), ngram};
  c = test::with_speculation(c, "bad", 4);
  c.speculative.fallback_provider = "ngram";
  c.speculative.fallback_below = 0.5;  // the bad plugin's chains (no probabilities) count 3: never weak
  test::LogCapture log;
  auto engine = Engine::from_config(c);
  const auto runs = test::run_batch(*engine, prompts, {params});
  ASSERT_EQ(log.fallbacks().size(), 1u) << ::testing::PrintToString(log.fallbacks());
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(runs[i].output, reference[i].output) << "request " << i;
  EXPECT_GT(runs[0].stats.speculation.draft_tokens, 0) << "request 0 drafts with the fallback after the failure";
  EXPECT_GT(engine->metrics().drafts_by_provider.at("ngram"), 0);
  EXPECT_GT(engine->metrics().drafts_by_provider.at("bad"), 0) << "request 1 stays with its provider";
  EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SpeculationFallbackTest,
    ::testing::Values(
        BadCase{"parent_out_of_range", DRIFT_ABI_PLUGIN_BAD_PARENT_OUT_OF_RANGE, "on_propose", "node 1 has parent 7"},
        BadCase{"not_topological", DRIFT_ABI_PLUGIN_BAD_NOT_TOPOLOGICAL, "on_propose", "node 1 has parent 1"},
        BadCase{"token_outside_vocab", DRIFT_ABI_PLUGIN_BAD_TOKEN_OUTSIDE_VOCAB, "on_propose",
                "outside the vocabulary"},
        BadCase{"duplicate_siblings", DRIFT_ABI_PLUGIN_BAD_DUPLICATE_SIBLINGS, "on_propose", "repeats token"},
        BadCase{"over_budget", DRIFT_ABI_PLUGIN_BAD_OVER_BUDGET, "on_propose", "with a budget of 4"},
        BadCase{"hook_fails", DRIFT_ABI_PLUGIN_BAD_HOOK_FAILS, "on_propose", "status 1"},
        BadCase{"tree_struct_size", DRIFT_ABI_PLUGIN_BAD_TREE_STRUCT_SIZE, "on_propose", "input field struct_size"},
        BadCase{"tree_seq_id", DRIFT_ABI_PLUGIN_BAD_TREE_SEQ_ID, "on_propose", "input field seq_id"},
        BadCase{"tree_budget", DRIFT_ABI_PLUGIN_BAD_TREE_BUDGET, "on_propose", "input field budget"},
        BadCase{"tree_tokens", DRIFT_ABI_PLUGIN_BAD_TREE_TOKENS, "on_propose", "input field tokens"},
        BadCase{"tree_parents", DRIFT_ABI_PLUGIN_BAD_TREE_PARENTS, "on_propose", "input field parents"},
        BadCase{"tree_probs", DRIFT_ABI_PLUGIN_BAD_TREE_PROBS, "on_propose", "input field probs"},
        BadCase{"tree_all_inputs", DRIFT_ABI_PLUGIN_BAD_TREE_ALL_INPUTS, "on_propose", "overwrote the input field"},
        BadCase{"view_struct_size", DRIFT_ABI_PLUGIN_BAD_VIEW_STRUCT_SIZE, "on_choose_kv_view",
                "input field struct_size"},
        BadCase{"view_seq_id", DRIFT_ABI_PLUGIN_BAD_VIEW_SEQ_ID, "on_choose_kv_view", "input field seq_id"},
        BadCase{"view_max_pages", DRIFT_ABI_PLUGIN_BAD_VIEW_MAX_PAGES, "on_choose_kv_view", "input field max_pages"},
        BadCase{"view_page_counts", DRIFT_ABI_PLUGIN_BAD_VIEW_PAGE_COUNTS, "on_choose_kv_view",
                "input field page_counts"},
        BadCase{"view_pages", DRIFT_ABI_PLUGIN_BAD_VIEW_PAGES, "on_choose_kv_view", "input field pages"},
        BadCase{"view_all_inputs", DRIFT_ABI_PLUGIN_BAD_VIEW_ALL_INPUTS, "on_choose_kv_view",
                "overwrote the input field"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace drift
