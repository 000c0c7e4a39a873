// The prefix cache on real checkpoints (the CPU backend, fp32): outputs with the cache equal the
// outputs without it, token for token (greedy) -- single requests, a batch sharing a system
// prompt, multi-turn continuations -- with speculation off, through ngram and through the
// oracle, under both capacity policies (a pool small enough that max_utilization preempts and
// the cache must give pages back).
#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/engine.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using Tokens = std::vector<int32_t>;
constexpr int64_t kNewTokens = 12;

Tokens concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

EngineConfig base_config(const std::string& dir) {
  EngineConfig c;
  c.model.path = dir;
  c.engine.max_batch_size = 8;
  c.engine.max_num_tokens = 64;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 4;
  c.kv_cache.num_pages = 512;
  return c;
}

// The workload: a system prompt (the golden prompts joined, 20+ tokens) shared by six user
// prompts, each a piece of a golden prompt.
struct Workload {
  Tokens system;
  std::vector<Tokens> users;
};

Workload workload_for(const std::string& dir) {
  Workload w;
  std::vector<Tokens> prompts;
  for (const auto& c : test::load_golden_cases(dir)) prompts.push_back(c.prompt);
  for (const Tokens& p : prompts) w.system = concat(w.system, p);
  while (w.system.size() < 21) w.system = concat(w.system, prompts[0]);
  w.system.resize(21);  // five full pages and one token
  for (size_t i = 0; w.users.size() < 6; ++i) {
    const Tokens& p = prompts[i % prompts.size()];
    w.users.push_back(
        Tokens(p.begin() + static_cast<int64_t>(i / prompts.size()) % static_cast<int64_t>(p.size()), p.end()));
  }
  return w;
}

// Runs the workload: the first user prompt alone, the other five as one batch, then a second
// turn of the first conversation (its prompt, output and a new user prompt). Returns every output.
std::vector<Tokens> run_workload(Engine& engine, const Workload& w, const SamplingParams& params) {
  std::vector<Tokens> outputs;
  const Tokens first = concat(w.system, w.users[0]);
  outputs.push_back(test::run_one_by_one(engine, {first}, params)[0].output);
  std::vector<Tokens> batch;
  for (size_t i = 1; i < w.users.size(); ++i) batch.push_back(concat(w.system, w.users[i]));
  for (const test::RunResult& r : test::run_batch(engine, batch, {params})) outputs.push_back(r.output);
  const Tokens second_turn = concat(concat(first, outputs[0]), w.users[1]);
  outputs.push_back(test::run_one_by_one(engine, {second_turn}, params)[0].output);
  return outputs;
}

// The prompts run_workload runs, in the same order (for the oracle's reference file).
std::vector<Tokens> workload_prompts(const Workload& w, const std::vector<Tokens>& outputs) {
  std::vector<Tokens> prompts;
  for (const Tokens& u : w.users) prompts.push_back(concat(w.system, u));
  prompts.push_back(concat(concat(prompts[0], outputs[0]), w.users[1]));
  return prompts;
}

struct Case {
  const char* model;
  const char* speculation;  // "off", "ngram", "oracle"
  const char* policy;
};

class PrefixCacheModelTest : public ::testing::TestWithParam<Case> {};

TEST_P(PrefixCacheModelTest, OutputsWithTheCacheEqualOutputsWithout) {
  const Case& c = GetParam();
  const std::string dir = test::test_data_path(c.model);
  ASSERT_FALSE(dir.empty());
  const Workload w = workload_for(dir);
  SamplingParams params;
  params.max_new_tokens = kNewTokens;

  EngineConfig config = base_config(dir);
  config.scheduler.policy = c.policy;
  // Room for about two requests at a time: max_utilization preempts, cached pages are evicted.
  config.kv_cache.num_pages = 2 * ((static_cast<int64_t>(w.system.size()) + 40 + kNewTokens) / 4 + 2);
  const std::vector<Tokens> plain = run_workload(*Engine::from_config(config), w, params);

  EngineConfig cached = config;
  cached.plugins.push_back(test::prefix_cache_entry());
  const std::string speculation = c.speculation;
  if (speculation != "off") {
    std::vector<test::RunResult> runs(plain.size());
    for (size_t i = 0; i < plain.size(); ++i) runs[i].output = plain[i];
    const std::string reference =
        test::write_reference(test::make_temp_dir("prefix-model"), workload_prompts(w, plain), runs);
    cached.plugins.push_back(speculation == "ngram" ? test::ngram_entry(3)
                                                    : test::oracle_entry("oracle", reference, {0.3, 3, 4, 9}));
    cached = test::with_speculation(cached, cached.plugins.back().name, 8);
  }
  auto engine = Engine::from_config(cached);
  const std::vector<Tokens> outputs = run_workload(*engine, w, params);
  ASSERT_EQ(outputs.size(), plain.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(outputs[i], plain[i]) << "request " << i;
  const EngineMetrics& m = engine->metrics();
  EXPECT_GE(m.prefix_cache.hits, 3) << "the shared system prompt must be hit";
  EXPECT_GE(m.prefix_cache.hit_tokens, 3 * 20);
  if (speculation != "off") {
    EXPECT_GT(m.speculation.draft_tokens, 0);
  }
  EXPECT_EQ(engine->kv().num_free_pages() + m.prefix_cache.pages_held, engine->kv().num_pages());
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* model : {"models/stories260K", "golden/qwen2-tiny", "golden/llama-tiny"})
    for (const char* speculation : {"off", "ngram", "oracle"})
      for (const char* policy : {"guaranteed_no_evict", "max_utilization"}) out.push_back({model, speculation, policy});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, PrefixCacheModelTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string name = fmt::format("{}_{}_{}", info.param.model, info.param.speculation, info.param.policy);
  std::replace_if(
      name.begin(), name.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '_');
  return name;
});

}  // namespace
}  // namespace drift
