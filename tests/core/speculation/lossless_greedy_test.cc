// Lossless greedy speculation: for every golden model (gptoss-tiny: trees under sliding windows)
// and stories260K, with the ngram provider
// (chains and trees) and the oracle (chains and trees; corruption 0, 0.3, 0.7, 1.0), the
// speculative output is token-for-token the non-speculative output -- batch 1, batch 8 with
// mixed prompt lengths, chunked prefill under a small token budget, and a KV budget small
// enough to force preemption under both capacity policies.
#include <algorithm>
#include <map>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/engine.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kNewTokens = 24;

struct Provider {
  std::string label;
  bool oracle = false;
  test::OracleSettings oracle_settings;
  int64_t ngram_matches = 1;
};

struct Case {
  const char* model;
  Provider provider;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.provider.label; }

EngineConfig base_config(const std::string& dir) {
  EngineConfig c;
  c.model.path = dir;
  c.engine.max_batch_size = 8;
  c.engine.max_num_tokens = 256;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 4;
  c.kv_cache.num_pages = 512;
  return c;
}

// Eight prompts of mixed lengths: the golden prompts, then pieces of them repeated (which gives
// the ngram provider something to match).
std::vector<std::vector<int32_t>> prompts_for(const std::string& dir) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& c : test::load_golden_cases(dir)) prompts.push_back(c.prompt);
  std::mt19937 rng(11);
  for (size_t i = 0; prompts.size() < 8; ++i) {
    std::vector<int32_t> p = prompts[i % prompts.size()];
    const size_t cut = 1 + rng() % p.size();
    p.insert(p.end(), p.begin(), p.begin() + cut);
    prompts.push_back(p);
  }
  prompts.resize(8);
  return prompts;
}

class LosslessGreedyTest : public ::testing::TestWithParam<Case> {
 protected:
  // The plain run of a model's prompts, computed once per model (the suites run it 30 times).
  struct Reference {
    std::vector<std::vector<int32_t>> prompts;
    std::vector<test::RunResult> runs;
    std::string file;
  };

  void SetUp() override {
    dir_ = test::test_data_path(GetParam().model);
    ASSERT_FALSE(dir_.empty());
    params_.max_new_tokens = kNewTokens;
    static std::map<std::string, Reference> cache;
    auto [it, fresh] = cache.try_emplace(dir_);
    if (fresh) {
      it->second.prompts = prompts_for(dir_);
      auto plain = Engine::from_config(base_config(dir_));
      it->second.runs = test::run_batch(*plain, it->second.prompts, {params_});
      it->second.file = test::write_reference(test::make_temp_dir("lossless"), it->second.prompts, it->second.runs);
    }
    prompts_ = it->second.prompts;
    reference_ = it->second.runs;
    reference_file_ = it->second.file;
  }

  EngineConfig speculative(EngineConfig c) const {
    const Provider& p = GetParam().provider;
    c.plugins = {p.oracle ? test::oracle_entry("oracle", reference_file_, p.oracle_settings)
                          : test::ngram_entry(p.ngram_matches)};
    return test::with_speculation(c, c.plugins[0].name, 8);
  }

  void expect_reference(const std::vector<test::RunResult>& runs, const std::string& scenario) {
    ASSERT_EQ(runs.size(), reference_.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(runs[i].output, reference_[i].output) << scenario << ", prompt " << i;
      EXPECT_EQ(runs[i].finish_reason, reference_[i].finish_reason) << scenario << ", prompt " << i;
      EXPECT_EQ(runs[i].streamed, runs[i].output) << scenario << ": what streamed is what was committed";
      const SpeculationStats& s = runs[i].stats.speculation;
      EXPECT_EQ(s.draft_tokens, s.accepted_tokens + s.rewound_tokens) << scenario;
    }
  }

  std::string dir_, reference_file_;
  std::vector<std::vector<int32_t>> prompts_;
  SamplingParams params_;
  std::vector<test::RunResult> reference_;
};

// All scenarios in one test: the reference run is computed once per process (ctest runs each
// test in its own).
TEST_P(LosslessGreedyTest, EveryScenarioGivesThePlainOutput) {
  {
    auto engine = Engine::from_config(speculative(base_config(dir_)));
    expect_reference(test::run_one_by_one(*engine, prompts_, params_), "batch 1");
    if (GetParam().provider.oracle && GetParam().provider.oracle_settings.corruption == 0.0) {
      EXPECT_GT(engine->metrics().speculation.accepted_tokens, 0) << "a perfect oracle must get drafts accepted";
    }
  }
  {
    EngineConfig c = base_config(dir_);
    c.engine.max_num_tokens = 12;  // prompts arrive in chunks; drafts shrink to what is left
    auto engine = Engine::from_config(speculative(c));
    expect_reference(test::run_batch(*engine, prompts_, {params_}), "batch 8, token budget 12");
  }
  for (const char* policy : {"max_utilization", "guaranteed_no_evict"}) {
    EngineConfig c = base_config(dir_);
    c.scheduler.policy = policy;
    int64_t longest = 0;
    for (const auto& p : prompts_) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()));
    // Room for the longest request and a little more: max_utilization admits several short ones
    // and must preempt as they grow; guaranteed_no_evict admits only what it can finish, drafts
    // included (clamped so that every request still fits).
    c.kv_cache.num_pages = (longest + kNewTokens + 3) / 4 + 2;
    auto engine = Engine::from_config(speculative(c));
    expect_reference(test::run_batch(*engine, prompts_, {params_}), std::string("small KV cache, ") + policy);
    if (std::string(policy) == "max_utilization") {
      EXPECT_GT(engine->metrics().preemptions, 0) << "the cache must force preemption";
    }
    EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages()) << "no page leaked";
  }
}

std::vector<Provider> providers() {
  std::vector<Provider> out = {{"ngram_chain", false, {}, 1}, {"ngram_tree", false, {}, 3}};
  for (double corruption : {0.0, 0.3, 0.7, 1.0})
    for (int64_t branching : {1, 3}) {
      Provider p{fmt::format("oracle_c{}_b{}", static_cast<int>(corruption * 10), branching), true, {}, 1};
      p.oracle_settings = {corruption, branching, 4, 5};
      out.push_back(p);
    }
  return out;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* model : {"golden/llama-tiny", "golden/qwen2-tiny", "golden/qwen3-tiny", "models/stories260K"})
    for (const Provider& p : providers()) out.push_back({model, p});
  // gptoss-tiny's own matter is its windows over trees: ngram trees and the oracle's trees and
  // chains, perfect and corrupted (the other combinations run above, on models without windows).
  for (const Provider& p : providers())
    if (p.label == "ngram_tree" || p.label == "oracle_c0_b3" || p.label == "oracle_c3_b1" || p.label == "oracle_c7_b3")
      out.push_back({"golden/gptoss-tiny", p});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Speculation, LosslessGreedyTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string name = std::string(info.param.model) + "_" + info.param.provider.label;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
  return name;
});

}  // namespace
}  // namespace drift
