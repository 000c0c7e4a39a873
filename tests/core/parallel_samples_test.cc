// Parallel samples (n > 1) on a real model (stories260K): each sample is exactly the request it
// stands for -- sample i of a seeded request equals that request alone with seed + i, greedy
// samples equal greedy decoding, with and without speculation, under preemption -- while the
// prompt's KV is computed once and shared (the KV integrity check runs after every step).
#include <gtest/gtest.h>

#include <set>

#include "core/engine.h"
#include "core/error.h"
#include "core/parallel_samples.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kBlock = 4;

EngineConfig stories_config(const char* policy = "guaranteed_no_evict", int64_t num_pages = 512) {
  EngineConfig config;
  config.model.path = test::test_data_path("models/stories260K");
  config.engine.max_num_tokens = 16;
  config.engine.check_kv_integrity = true;
  config.kv_cache.block_size = kBlock;
  config.kv_cache.num_pages = num_pages;
  config.scheduler.policy = policy;
  return config;
}

// 41 tokens ("Once upon a time" and more): longer than one step's token budget, so the first
// sample's prefill takes several steps.
const std::vector<int32_t> kPrompt = {1,   403, 407, 261, 378, 31,  68,  105, 142, 179, 216, 253, 290, 327,
                                      364, 401, 438, 475, 32,  69,  106, 143, 180, 217, 254, 291, 328, 365,
                                      402, 439, 476, 33,  70,  107, 144, 181, 218, 255, 292, 329, 366};

SamplingParams seeded(uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.9;
  p.top_k = 50;
  p.seed = seed;
  p.max_new_tokens = 40;
  p.ignore_eos = true;
  return p;
}

std::vector<int32_t> run_alone(const EngineConfig& config, const SamplingParams& params) {
  auto engine = Engine::from_config(config);
  return test::run_batch(*engine, {kPrompt}, {params})[0].output;
}

struct SamplesRun {
  std::vector<std::vector<int32_t>> outputs;
  std::vector<RequestStats> stats;
  EngineMetrics metrics;
};

SamplesRun run_samples(Engine& engine, const SamplingParams& params, int64_t n) {
  const std::vector<int64_t> ids = engine.add_samples(kPrompt, params, n);
  while (engine.has_unfinished()) engine.step();
  SamplesRun run;
  for (int64_t id : ids) {
    const Sequence& seq = engine.request(id);
    EXPECT_EQ(seq.finish_reason, FinishReason::Length) << seq.error;
    run.outputs.push_back(seq.output);
    run.stats.push_back(seq.stats);
  }
  run.metrics = engine.metrics();
  return run;
}

TEST(ParallelSamplesTest, SeededSampleIsTheRequestAloneWithSeedPlusIndex) {
  const EngineConfig config = stories_config();
  auto engine = Engine::from_config(config);
  const SamplesRun run = run_samples(*engine, seeded(1234), 4);
  std::set<std::vector<int32_t>> distinct;
  for (size_t i = 0; i < run.outputs.size(); ++i) {
    EXPECT_EQ(run.outputs[i], run_alone(config, seeded(1234 + i))) << "sample " << i;
    EXPECT_EQ(run.stats[i].seed, 1234 + i);
    distinct.insert(run.outputs[i]);
  }
  EXPECT_GT(distinct.size(), 1u) << "the samples drew from one stream";
}

TEST(ParallelSamplesTest, ThePromptIsComputedOnceAndItsPagesShared) {
  auto engine = Engine::from_config(stories_config());
  const SamplesRun run = run_samples(*engine, seeded(7), 3);
  const auto prompt = static_cast<int64_t>(kPrompt.size());
  const int64_t shared = (prompt - 1) / kBlock * kBlock;
  EXPECT_EQ(run.stats[0].shared_tokens, 0);
  EXPECT_EQ(run.stats[1].shared_tokens, shared);
  EXPECT_EQ(run.stats[2].shared_tokens, shared);
  // The first sample computes the prompt; the others only what follows the shared pages.
  EXPECT_EQ(run.metrics.prefill_tokens, prompt + 2 * (prompt - shared));
}

TEST(ParallelSamplesTest, GreedySamplesEqualGreedyDecodingWithAndWithoutSpeculation) {
  const SamplingParams greedy = test::greedy_ignoring_eos(40);
  const std::vector<int32_t> reference = run_alone(stories_config(), greedy);
  auto plain = Engine::from_config(stories_config());
  for (const auto& output : run_samples(*plain, greedy, 3).outputs) EXPECT_EQ(output, reference);
  auto speculative = Engine::from_config(test::with_ngram_drafts(stories_config()));
  const SamplesRun run = run_samples(*speculative, greedy, 3);
  for (const auto& output : run.outputs) EXPECT_EQ(output, reference);
  EXPECT_GT(run.metrics.speculation.draft_tokens, 0) << "nothing was drafted: the comparison proves nothing";
}

TEST(ParallelSamplesTest, SamplesSurvivePreemptionUnchanged) {
  // 28 pages of 4 slots: three samples (81 tokens each, 40 of them shared) cannot all stay; max_utilization preempts
  // and recomputes, and a preempted sample shares its prompt again when readmitted.
  const EngineConfig config = stories_config("max_utilization", 28);
  auto engine = Engine::from_config(config);
  const SamplesRun run = run_samples(*engine, seeded(99), 3);
  EXPECT_GT(run.metrics.preemptions, 0) << "the pool was meant to force preemption";
  for (size_t i = 0; i < run.outputs.size(); ++i)
    EXPECT_EQ(run.outputs[i], run_alone(stories_config(), seeded(99 + i))) << "sample " << i;
}

TEST(ParallelSamplesTest, SampleCountOutOfRangeIsRefused) {
  auto engine = Engine::from_config(stories_config());
  EXPECT_THROW(engine->add_samples(kPrompt, seeded(1), 0), DriftError);
  EXPECT_THROW(engine->add_samples(kPrompt, seeded(1), kMaxParallelSamples + 1), DriftError);
  EXPECT_FALSE(engine->has_unfinished());
}

}  // namespace
}  // namespace drift
