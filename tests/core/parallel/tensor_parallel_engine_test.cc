// Tensor parallelism on the CPU backend, end to end (docs/tensor_parallel.md): ranks are real
// processes (the built `drift rank`), meeting at a rendezvous and driven by rank 0's step plan.
//  - The goldens and stories260K at 2 and 4 ranks equal one rank: teacher-forced logits within
//    fp32 reduction-order error (and HF's tolerance), greedy tokens equal -- batched with chunked
//    prefill, and preempted.
//  - Speculation unchanged under TP: ngram, oracle trees and EAGLE-3 give the plain tokens, and
//    EAGLE-3 commits exactly the reference run's tokens per step.
//  - A rank killed or hung mid-run ends the engine with an error naming it, in bounded time.
//  - Sizes that cannot split a model, and settings TP cannot run, are errors naming them.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine.h"
#include "core/error.h"
#include "core/parallel/tensor_parallel_executor.h"
#include "support/drift_error_matchers.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using Tokens = std::vector<int32_t>;
using namespace std::chrono_literals;

EngineConfig config_for(const std::string& dir, int size, int64_t token_budget = 64, int64_t num_pages = 256,
                        const char* policy = "guaranteed_no_evict", int64_t block_size = 16) {
  EngineConfig c;
  c.model.path = dir;
  c.engine.tensor_parallel_size = size;
  c.engine.max_num_tokens = token_budget;
  c.engine.max_batch_size = 16;
  c.engine.num_threads = 1;  // ranks are processes: one thread each keeps a 2-core machine unoversubscribed
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = block_size;
  c.kv_cache.num_pages = num_pages;
  c.scheduler.policy = policy;
  c.tensor_parallel.rank_executable = test::drift_exe();  // this test binary is not drift
  return c;
}

std::vector<Tokens> greedy_outputs(Engine& engine, const std::vector<Tokens>& prompts, int64_t n) {
  return test::outputs_of(test::run_batch(engine, prompts, {test::greedy_ignoring_eos(n)}));
}

struct Split {
  const char* dir;
  int size;
};
void PrintTo(const Split& s, std::ostream* os) { *os << s.dir << " x" << s.size; }

class GoldenSplit : public ::testing::TestWithParam<Split> {
 protected:
  void SetUp() override {
    dir_ = test::test_data_path(GetParam().dir);
    ASSERT_FALSE(dir_.empty());
    cases_ = test::load_golden_cases(dir_);
    ASSERT_FALSE(cases_.empty());
    for (const auto& c : cases_) prompts_.push_back(c.prompt);
  }
  int64_t longest_output() const {
    size_t n = 0;
    for (const auto& c : cases_) n = std::max(n, c.output.size());
    return static_cast<int64_t>(n);
  }
  std::string dir_;
  std::vector<test::GoldenCase> cases_;
  std::vector<Tokens> prompts_;
};

// Summing the ranks' partial projections reorders fp32 additions: logits move by ~1e-6 of their
// scale, far inside HF's 1e-3 tolerance.
TEST_P(GoldenSplit, TeacherForcedLogitsEqualOneRanks) {
  auto one = Engine::from_config(config_for(dir_, 1));
  auto split = Engine::from_config(config_for(dir_, GetParam().size));
  double worst = 0;
  for (const auto& c : cases_) {
    const Tensor ours = split->score(c.sequence());
    const double vs_one = test::max_relative_logit_error(ours, one->score(c.sequence()));
    worst = std::max(worst, vs_one);
    EXPECT_LE(vs_one, 1e-5);
    EXPECT_LE(test::max_relative_logit_error(test::first_rows(ours, c.logits.dim(0)), c.logits), 1e-3);
  }
  std::printf("[tp] %s x%d: max relative logit error vs one rank %.3g\n", GetParam().dir, GetParam().size, worst);
  EXPECT_EQ(split->kv().num_free_pages(), split->kv().num_pages());
}

TEST_P(GoldenSplit, GreedyBatchedWithChunkedPrefillEqualsOneRank) {
  const int64_t n = longest_output();
  auto one = Engine::from_config(config_for(dir_, 1, 24));
  auto split = Engine::from_config(config_for(dir_, GetParam().size, 24));
  const auto outputs = greedy_outputs(*split, prompts_, n);
  EXPECT_EQ(outputs, greedy_outputs(*one, prompts_, n));
  // And HF's tokens, by the goldens' rule (ties aside).
  auto score_own = [&](const Tokens& seq) { return split->score(seq); };
  for (size_t i = 0; i < cases_.size(); ++i) {
    const Tokens mine(outputs[i].begin(), outputs[i].begin() + static_cast<int64_t>(cases_[i].output.size()));
    EXPECT_EQ(test::greedy_mismatch(cases_[i], mine, score_own), "") << "case " << i;
  }
}

TEST_P(GoldenSplit, PreemptedRunsEqualOneRanksRoomyRun) {
  constexpr int64_t kBlock = 4;
  const int64_t n = longest_output();
  int64_t longest = 0;
  for (const auto& p : prompts_) longest = std::max<int64_t>(longest, static_cast<int64_t>(p.size()) + n);
  const int64_t tight_pages = (longest + kBlock - 1) / kBlock + 2;
  auto tight = Engine::from_config(config_for(dir_, GetParam().size, 64, tight_pages, "max_utilization", kBlock));
  auto roomy = Engine::from_config(config_for(dir_, 1, 64, 512, "max_utilization", kBlock));
  EXPECT_EQ(greedy_outputs(*tight, prompts_, n), greedy_outputs(*roomy, prompts_, n));
  EXPECT_GT(tight->metrics().decode_preemptions, 0) << "no request was preempted mid-decode";
  EXPECT_EQ(tight->kv().num_free_pages(), tight->kv().num_pages());
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenSplit,
                         ::testing::Values(Split{"golden/llama-tiny", 2}, Split{"golden/llama-tiny", 4},
                                           Split{"golden/qwen2-tiny", 2}, Split{"golden/qwen3-tiny", 2},
                                           Split{"golden/qwen3-tiny", 4}, Split{"models/stories260K", 2},
                                           Split{"models/stories260K", 4}),
                         [](const auto& info) {
                           std::string name = fmt::format("{}_x{}", info.param.dir, info.param.size);
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// --- speculation under tensor parallelism: stories260K with its EAGLE-3 head ---

std::string head_dir() { return test::test_data_path("models/stories260K-eagle3"); }
nlohmann::json eagle3_golden() {
  std::ifstream in(head_dir() + "/golden_speculative.json");
  return nlohmann::json::parse(in);
}
std::vector<Tokens> stories_prompts() { return eagle3_golden().at("prompts").get<std::vector<Tokens>>(); }

PluginEntry eagle3_chain(int depth) {
  PluginEntry e;
  e.name = "eagle3";
  e.settings_toml =
      fmt::format("checkpoint = {}\ntree = \"chain\"\ndepth = {}\n", nlohmann::json(head_dir()).dump(), depth);
  return e;
}

TEST(TensorParallelSpeculation, EveryProviderGivesThePlainTokens) {
  const std::string dir = test::test_data_path("models/stories260K");
  const std::vector<Tokens> prompts = stories_prompts();
  constexpr int64_t kNew = 48;
  auto plain_one = Engine::from_config(config_for(dir, 1, 256, 512));
  const auto plain_runs = test::run_batch(*plain_one, prompts, {test::greedy_ignoring_eos(kNew)});
  const auto plain = test::outputs_of(plain_runs);
  const std::string reference = test::write_reference(test::make_temp_dir("tp-oracle"), prompts, plain_runs);
  for (int size : {2, 4}) {
    EngineConfig ngram = config_for(dir, size, 256, 512);
    ngram.plugins.push_back(test::ngram_entry(2));
    EngineConfig oracle = config_for(dir, size, 256, 512);
    oracle.plugins.push_back(test::oracle_entry("oracle", reference, {0.3, 2, 4, 7}));
    EngineConfig eagle3 = config_for(dir, size, 256, 512);
    eagle3.plugins.push_back(eagle3_chain(3));
    for (auto [config, provider] :
         {std::pair{ngram, "ngram"}, std::pair{oracle, "oracle"}, std::pair{eagle3, "eagle3"}}) {
      auto engine = Engine::from_config(test::with_speculation(config, provider, 8));
      EXPECT_EQ(greedy_outputs(*engine, prompts, kNew), plain) << provider << " x" << size;
      EXPECT_GT(engine->metrics().speculation.accepted_tokens, 0) << provider << " x" << size;
      // The whole embedding and head are loaded on rank 0 only for a plugin that reads them.
      EXPECT_EQ(dynamic_cast<TensorParallelExecutor&>(engine->executor()).shared_weights_loaded(),
                std::string(provider) == "eagle3")
          << provider;
    }
  }
}

// Under preemption (recompute with drafts in flight) and with the prefix cache adopting pages: the
// page tables are rank 0's, every rank holds the same pages' KV of its own heads.
TEST(TensorParallelSpeculation, PreemptedAndCachedRunsGiveThePlainTokens) {
  const std::string dir = test::test_data_path("models/stories260K");
  const std::vector<Tokens> prompts = stories_prompts();
  constexpr int64_t kNew = 40;
  const auto plain = greedy_outputs(*Engine::from_config(config_for(dir, 1, 256, 512)), prompts, kNew);
  for (const char* provider : {"ngram", "eagle3"}) {
    EngineConfig tight = config_for(dir, 2, 64, 28, "max_utilization", 4);
    tight.plugins.push_back(std::string(provider) == "ngram" ? test::ngram_entry(2) : eagle3_chain(3));
    auto engine = Engine::from_config(test::with_speculation(tight, provider, 6));
    EXPECT_EQ(greedy_outputs(*engine, prompts, kNew), plain) << provider;
    EXPECT_GT(engine->metrics().decode_preemptions, 0) << provider;
    EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages());
  }
  EngineConfig cached = config_for(dir, 2, 256, 512);
  cached.plugins.push_back(test::prefix_cache_entry());
  auto engine = Engine::from_config(cached);
  for (int round = 0; round < 2; ++round)  // the second round adopts the first's pages
    EXPECT_EQ(test::outputs_of(test::run_one_by_one(*engine, prompts, test::greedy_ignoring_eos(kNew))), plain);
  EXPECT_GT(engine->metrics().prefix_cache.hit_tokens, 0);
}

// Sampling draws from counter-based seeds on the whole logit rows rank 0 gathers: the split engine
// draws what one rank draws, plain and speculating (sampled acceptance, target-only tree sampling).
TEST(TensorParallelSpeculation, SampledRunsDrawWhatOneRankDraws) {
  const std::string dir = test::test_data_path("models/stories260K");
  const std::vector<Tokens> prompts = stories_prompts();
  SamplingParams sampled = test::greedy_ignoring_eos(40);
  sampled.temperature = 0.8;
  sampled.top_p = 0.95;
  sampled.seed = 1234;
  auto one = Engine::from_config(config_for(dir, 1, 256, 512));
  const auto expected = test::outputs_of(test::run_batch(*one, prompts, {sampled}));
  auto split = Engine::from_config(config_for(dir, 2, 256, 512));
  EXPECT_EQ(test::outputs_of(test::run_batch(*split, prompts, {sampled})), expected);
  // Sampled rows need whole logit rows on rank 0.
  const auto gathers = dynamic_cast<TensorParallelExecutor&>(split->executor()).runner().logit_gathers();
  EXPECT_GT(gathers.whole, 0);
  EXPECT_EQ(gathers.argmax, 0);
  EngineConfig ngram = config_for(dir, 2, 256, 512);
  ngram.plugins.push_back(test::ngram_entry(2));
  auto speculating = Engine::from_config(test::with_speculation(ngram, "ngram", 8));
  EXPECT_EQ(test::outputs_of(test::run_batch(*speculating, prompts, {sampled})), expected);
}

// Each request's logprobs, in prompt order.
std::vector<std::vector<TokenLogprobs>> logprobs_of(Engine& engine, const std::vector<Tokens>& prompts,
                                                    const SamplingParams& params) {
  std::map<int64_t, size_t> index;
  for (size_t i = 0; i < prompts.size(); ++i) index[engine.add_request(prompts[i], params)] = i;
  std::vector<std::vector<TokenLogprobs>> out(prompts.size());
  while (engine.has_unfinished())
    for (const RequestOutput& o : engine.step())
      if (index.count(o.id)) out[index[o.id]].insert(out[index[o.id]].end(), o.logprobs.begin(), o.logprobs.end());
  return out;
}

// Plain greedy rows meet as each row's argmax (a few bytes a row); a request asking for logprobs
// gets whole rows, and the same logprobs as on one rank.
TEST(TensorParallelSpeculation, GreedyRowsMeetAsArgmaxesAndLogprobsAsWholeRows) {
  const std::string dir = test::test_data_path("models/stories260K");
  const std::vector<Tokens> prompts = stories_prompts();
  auto one = Engine::from_config(config_for(dir, 1, 256, 512));
  auto split = Engine::from_config(config_for(dir, 2, 256, 512));
  auto& runner = dynamic_cast<TensorParallelExecutor&>(split->executor()).runner();
  EXPECT_EQ(greedy_outputs(*split, prompts, 24), greedy_outputs(*one, prompts, 24));
  EXPECT_GT(runner.logit_gathers().argmax, 0);
  EXPECT_EQ(runner.logit_gathers().whole, 0);
  SamplingParams with_logprobs = test::greedy_ignoring_eos(16);
  with_logprobs.logprobs = 3;
  const auto expected = logprobs_of(*one, prompts, with_logprobs);
  const auto got = logprobs_of(*split, prompts, with_logprobs);
  EXPECT_GT(runner.logit_gathers().whole, 0);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), expected[i].size()) << "prompt " << i;
    for (size_t t = 0; t < got[i].size(); ++t) {
      EXPECT_EQ(got[i][t].chosen.token, expected[i][t].chosen.token);
      EXPECT_NEAR(got[i][t].chosen.logprob, expected[i][t].chosen.logprob, 1e-5);
      ASSERT_EQ(got[i][t].top.size(), 3u);
      for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(got[i][t].top[k].logprob, expected[i][t].top[k].logprob, 1e-5);
    }
  }
}

// eagle3_ref.py's speculative run (golden_speculative.json, chain of 4): the split engine commits
// the reference's tokens step for step -- drafting from rank 0's whole residual stream, verifying
// across the ranks.
TEST(TensorParallelSpeculation, Eagle3CommitsTheReferenceTokensPerStep) {
  const nlohmann::json g = eagle3_golden();
  const int k = 4;
  const auto reference = g.at("runs").at(std::to_string(k)).at("steps").get<std::vector<Tokens>>();
  const std::vector<Tokens> prompts = stories_prompts();
  EngineConfig config = config_for(test::test_data_path("models/stories260K"), 2, 256, 512);
  config.plugins.push_back(eagle3_chain(k));
  auto engine = Engine::from_config(test::with_speculation(config, "eagle3", k));
  const auto runs =
      test::run_batch(*engine, prompts, {test::greedy_ignoring_eos(g.at("new_tokens").get<int64_t>() + k + 1)});
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& steps = runs[i].stats.speculation.committed_per_step;
    const size_t n = std::min(reference[i].size(), steps.size() - 1);
    EXPECT_EQ(Tokens(steps.begin() + 1, steps.begin() + 1 + static_cast<int64_t>(n)), reference[i]) << "prompt " << i;
  }
}

// --- failures ---

// A rank executable that records each rank's process id, then runs drift.
std::string recording_rank_executable(const std::string& dir) {
  const std::string path = dir + "/rank.sh";
  std::ofstream(path) << "#!/bin/sh\necho $$ > " << dir << "/rank-$5.pid\nexec " << test::drift_exe() << " \"$@\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

pid_t read_pid(const std::string& file) {
  pid_t pid = 0;
  std::ifstream(file) >> pid;
  return pid;
}

// Steps until the engine throws; the error and how long after `since` it came.
std::pair<std::string, std::chrono::steady_clock::duration> step_until_error(
    Engine& engine, std::chrono::steady_clock::time_point since) {
  try {
    while (engine.has_unfinished()) engine.step();
  } catch (const DriftError& e) {
    return {e.what(), std::chrono::steady_clock::now() - since};
  }
  return {"", std::chrono::steady_clock::now() - since};
}

class RankFailure : public ::testing::TestWithParam<int> {};  // the signal sent to rank 1

TEST_P(RankFailure, EndsTheEngineWithAnErrorNamingTheRank) {
  const std::string dir = test::make_temp_dir("tp-failure");
  EngineConfig config = config_for(test::test_data_path("models/stories260K"), 2, 64, 256);
  config.tensor_parallel.rank_executable = recording_rank_executable(dir);
  config.tensor_parallel.timeout_s = 1.0;  // a hung rank is given up on after a second
  auto engine = Engine::from_config(config);
  const pid_t rank1 = read_pid(dir + "/rank-1.pid");
  ASSERT_GT(rank1, 0);
  for (const Tokens& p : stories_prompts()) engine->add_request(p, test::greedy_ignoring_eos(400));
  for (int i = 0; i < 5; ++i) engine->step();
  ASSERT_EQ(kill(rank1, GetParam()), 0);
  const auto [error, took] = step_until_error(*engine, std::chrono::steady_clock::now());
  EXPECT_THAT(error, ::testing::HasSubstr("tensor parallel rank 1 "));
  EXPECT_LT(took, 10s);
  // The engine refuses to go on, and closing it does not wait for the dead or hung rank.
  EXPECT_DRIFT_ERROR(engine->step(), "stopped after an earlier error");
  const auto closing = std::chrono::steady_clock::now();
  engine.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - closing, 5s);
  EXPECT_NE(kill(rank1, 0), 0) << "rank 1 outlived the engine";
}

INSTANTIATE_TEST_SUITE_P(Signals, RankFailure, ::testing::Values(SIGKILL, SIGSTOP),
                         [](const auto& info) { return info.param == SIGKILL ? "killed" : "hung"; });

TEST(TensorParallelStartup, ARankThatCannotStartIsNamed) {
  const std::string dir = test::make_temp_dir("tp-start");
  const std::string failing = dir + "/fails.sh";
  std::ofstream(failing) << "#!/bin/sh\nexit 3\n";
  std::filesystem::permissions(failing, std::filesystem::perms::owner_all);
  EngineConfig config = config_for(test::test_data_path("models/stories260K"), 2);
  config.tensor_parallel.rank_executable = failing;
  EXPECT_DRIFT_ERROR(Engine::from_config(config), "tensor parallel rank 1 (process");
  config.tensor_parallel.rank_executable = dir + "/missing";
  EXPECT_DRIFT_ERROR(Engine::from_config(config), "is not an executable");
  // This test binary is not drift: it is never started as a rank (it would run its own tests).
  config.tensor_parallel.rank_executable = "";
  EXPECT_DRIFT_ERROR(Engine::from_config(config), "is not drift, so it cannot start the ranks");
}

TEST(TensorParallelConfig, SizesAndSettingsItCannotRunAreNamed) {
  EngineConfig qwen2 = config_for(test::test_data_path("golden/qwen2-tiny"), 4);
  EXPECT_DRIFT_ERROR(Engine::from_config(qwen2),
                     "tensor_parallel_size = 4 does not divide the model's num_attention_heads = 6");
  EngineConfig gptoss = config_for(test::test_data_path("golden/gptoss-tiny"), 2);
  EXPECT_DRIFT_ERROR(Engine::from_config(gptoss), "mixture-of-experts layers are not split over ranks yet");
  EngineConfig cuda = config_for(test::test_data_path("models/stories260K"), 2);
  cuda.engine.backend = "cuda";
  EXPECT_DRIFT_ERROR(validate_config(cuda), "tensor parallelism runs on the cpu backend so far");
  EngineConfig bad_address = config_for(test::test_data_path("models/stories260K"), 2);
  bad_address.tensor_parallel.rendezvous = "nohost";
  EXPECT_DRIFT_ERROR(validate_config(bad_address), "tensor_parallel.rendezvous = \"nohost\"");
  EXPECT_DRIFT_ERROR(
      parse_config("schema_version = 1\n[engine]\ntensor_parallel_size = 2\n[tensor_parallel]\nlocal_ranks = 3\n",
                   "tp.toml", ""),
      "tp.toml: tensor_parallel.local_ranks = 3 is out of range [0, engine.tensor_parallel_size = 2]");
  EXPECT_DRIFT_ERROR(parse_config("schema_version = 1\n[engine]\ntensor_parallel_size = 0\n", "tp.toml", ""),
                     "engine.tensor_parallel_size = 0 is out of range [1, 64]");
  EXPECT_DRIFT_ERROR(parse_config("schema_version = 1\n[tensor_parallel]\nranks = 2\n", "tp.toml", ""), "ranks");
}

}  // namespace
}  // namespace drift
