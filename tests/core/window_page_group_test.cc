// The sliding-window page group end to end (issue 34: KV page groups per layer type) on
// golden/gptoss-tiny (window 16, two of its four layers windowed): the windowed layers hold only
// what their window still sees while the engine runs -- checked after every step, with the KV
// integrity check on -- and the outputs equal those of the same engine keeping full KV in every
// layer ([kv_cache] window_pages = false): batched with chunked prefill, preempted, with n > 1
// samples sharing their prompt, speculating, and with the prefix cache (hits adopt the window
// blocks kept with cached pages). The memory the group saves goes to the main pool: a budget that
// cannot hold a request with full KV holds it with the group.
#include <gtest/gtest.h>

#include <random>

#include "core/engine.h"
#include "core/error.h"
#include "core/kv_window_pages.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kBlock = 16, kWindow = 16;
// Between steps: [computed - 15 - 16, computed), three blocks when it starts mid-block; and a
// parallel sample's pinned prompt end, two more.
constexpr int64_t kHeldAtRest = (kWindow - 1 + kBlock + kBlock - 1) / kBlock + 1;
constexpr int64_t kPinned = (kWindow - 1 + kBlock - 1) / kBlock + 1;

EngineConfig gptoss_config(bool window_pages, const char* policy = "guaranteed_no_evict", int64_t num_pages = 256) {
  EngineConfig config;
  config.model.path = test::test_data_path("golden/gptoss-tiny");
  config.engine.max_num_tokens = 40;  // prompts arrive in chunks
  config.engine.max_batch_size = 6;
  config.engine.check_kv_integrity = true;
  config.kv_cache.block_size = kBlock;
  config.kv_cache.num_pages = num_pages;
  config.kv_cache.window_pages = window_pages;
  config.scheduler.policy = policy;
  return config;
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int64_t length) {
  std::vector<int32_t> ids(length);
  for (auto& id : ids) id = std::uniform_int_distribution<int32_t>(0, 511)(rng);
  return ids;
}

struct RunResult {
  std::vector<std::vector<int32_t>> outputs;
  int64_t shared_tokens = 0;
  int64_t preemptions = 0;
};

// Every prompt at once, greedy or seeded; after every step, the window group holds at most its
// resting share per sequence holding KV.
RunResult run_all(Engine& engine, const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params,
                  int64_t samples = 1) {
  std::vector<int64_t> ids;
  for (const auto& prompt : prompts) {
    if (samples == 1) {
      ids.push_back(engine.add_request(prompt, params));
      continue;
    }
    for (int64_t id : engine.add_samples(prompt, params, samples)) ids.push_back(id);
  }
  while (engine.has_unfinished()) {
    engine.step();
    if (const WindowPages* window = engine.kv().window_pages()) {
      const int64_t per_sequence = kHeldAtRest + (samples > 1 ? kPinned : 0);
      EXPECT_LE(window->pages_in_sequences(), per_sequence * engine.kv().num_sequences());
    }
  }
  RunResult run;
  for (int64_t id : ids) {
    const Sequence& out = engine.request(id);
    EXPECT_EQ(out.finish_reason, FinishReason::Length) << out.error;
    run.outputs.push_back(out.output);
    run.shared_tokens += out.stats.shared_tokens;
  }
  run.preemptions = engine.metrics().preemptions;
  if (const WindowPages* window = engine.kv().window_pages()) {
    EXPECT_EQ(window->pages_in_sequences(), 0);  // every request done: all returned
  }
  return run;
}

std::vector<std::vector<int32_t>> prompts_past_the_window(bool and_a_long_one = false) {
  std::mt19937 rng(34);
  std::vector<std::vector<int32_t>> prompts;
  for (int64_t length : {3, 17, 70, 131, 200}) prompts.push_back(random_prompt(rng, length));
  if (and_a_long_one) prompts.push_back(random_prompt(rng, 400));
  return prompts;
}

SamplingParams greedy(int64_t tokens) {
  SamplingParams p;
  p.max_new_tokens = tokens;
  p.ignore_eos = true;
  return p;
}

TEST(WindowPageGroup, OnByDefaultForGptOssAndFreesPagesAsTheWindowPasses) {
  auto engine = Engine::from_config(gptoss_config(true));
  const WindowPages* window = engine->kv().window_pages();
  ASSERT_NE(window, nullptr);
  EXPECT_EQ(window->window(), kWindow);
  EXPECT_EQ(window->num_pages(), WindowPages::pages_to_never_run_short(kWindow, kBlock, 6 + 1, 40));
  // The main pool's pages in use (about 76) outnumber the window group's 59: its slots are not
  // the group's.
  const RunResult grouped = run_all(*engine, prompts_past_the_window(true), greedy(60));
  auto full = Engine::from_config(gptoss_config(false));
  EXPECT_EQ(full->kv().window_pages(), nullptr);
  EXPECT_EQ(run_all(*full, prompts_past_the_window(true), greedy(60)).outputs, grouped.outputs);
}

// A 260-token request alone: after its last step it holds three window blocks, not 17.
TEST(WindowPageGroup, ALongRequestHoldsOnlyItsWindow) {
  auto engine = Engine::from_config(gptoss_config(true));
  std::mt19937 rng(7);
  const int64_t id = engine->add_request(random_prompt(rng, 200), greedy(60));
  int64_t most_held = 0;
  while (engine->has_unfinished()) {
    engine->step();
    const WindowPages& window = *engine->kv().window_pages();
    most_held = std::max(most_held, window.num_pages() - window.num_free_pages());
  }
  EXPECT_EQ(engine->request(id).output.size(), 60u);
  // A 40-token chunk beside the resting window: at most ceil(40 / 16) + 1 more blocks.
  EXPECT_LE(most_held, kHeldAtRest + 4);
  EXPECT_GE(most_held, kHeldAtRest);
}

TEST(WindowPageGroup, PreemptedAndRecomputedOutputsAreUnchanged) {
  // 24 pages (384 tokens) for 5 requests of up to 260 tokens: max_utilization preempts.
  auto grouped = Engine::from_config(gptoss_config(true, "max_utilization", 24));
  const RunResult a = run_all(*grouped, prompts_past_the_window(), greedy(60));
  EXPECT_GT(a.preemptions, 0);
  auto full = Engine::from_config(gptoss_config(false, "max_utilization", 24));
  EXPECT_EQ(run_all(*full, prompts_past_the_window(), greedy(60)).outputs, a.outputs);
}

// n = 3 seeded samples of each prompt: the samples share the prompt's pages and its window's
// blocks, and sample exactly what they sample with full KV everywhere.
TEST(WindowPageGroup, ParallelSamplesShareThePromptsWindow) {
  SamplingParams p = greedy(30);
  p.temperature = 0.8;
  p.seed = 11;
  auto grouped = Engine::from_config(gptoss_config(true));
  const RunResult a = run_all(*grouped, prompts_past_the_window(), p, 3);
  EXPECT_GT(a.shared_tokens, 0);
  auto full = Engine::from_config(gptoss_config(false));
  const RunResult b = run_all(*full, prompts_past_the_window(), p, 3);
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.shared_tokens, b.shared_tokens);
}

TEST(WindowPageGroup, SpeculationWithTheNgramProviderIsUnchanged) {
  auto with_ngram = [](bool window_pages) {
    EngineConfig config = gptoss_config(window_pages);
    config.plugins.push_back({"ngram", "", "", false, ""});
    config.speculative.enabled = true;
    config.speculative.draft_provider = "ngram";
    config.speculative.max_draft_tokens = 6;
    config.speculative.adaptive = false;
    return Engine::from_config(config);
  };
  // Repetitive prompts, so the n-gram provider's drafts are accepted.
  std::vector<std::vector<int32_t>> prompts;
  for (int32_t base : {5, 100, 300}) {
    std::vector<int32_t> prompt;
    for (int r = 0; r < 12; ++r)
      for (int32_t k = 0; k < 9; ++k) prompt.push_back(base + k);
    prompts.push_back(prompt);
  }
  auto grouped = with_ngram(true);
  const RunResult a = run_all(*grouped, prompts, greedy(50));
  EXPECT_GT(grouped->metrics().speculation.accepted_tokens, 0);
  auto full = with_ngram(false);
  EXPECT_EQ(run_all(*full, prompts, greedy(50)).outputs, a.outputs);
}

// What the windowed layers do not keep goes to the main pool: 1 MiB holds 64 pages (1,024
// tokens) of every layer's KV, or 128 pages of the two full layers' KV less the window group's
// 42 (5 sequences of 3 resting, 2 pinned and 3 step blocks, and 2 pages of step tokens): 86 main
// pages, 1,376 tokens.
TEST(WindowPageGroup, TheSavedMemoryHoldsLongerRequests) {
  auto budget = [](bool window_pages) {
    EngineConfig config = gptoss_config(window_pages);
    config.kv_cache.num_pages = 0;
    config.kv_cache.memory_mb = 1.0;
    config.engine.max_batch_size = 4;
    config.engine.max_num_tokens = 32;
    return Engine::from_config(config);
  };
  auto full = budget(false);
  auto grouped = budget(true);
  EXPECT_EQ(full->kv().num_pages(), 64);
  const int64_t window_pages = WindowPages::pages_to_never_run_short(kWindow, kBlock, 4 + 1, 32);
  EXPECT_EQ(window_pages, 42);
  EXPECT_EQ(grouped->kv().window_pages()->num_pages(), window_pages);
  EXPECT_EQ(grouped->kv().num_pages(), 128 - window_pages);
  std::mt19937 rng(3);
  const std::vector<int32_t> prompt = random_prompt(rng, 1200);
  const int64_t refused = full->add_request(prompt, greedy(20));
  while (full->has_unfinished()) full->step();
  EXPECT_EQ(full->request(refused).finish_reason, FinishReason::Error);
  const int64_t served = grouped->add_request(prompt, greedy(20));
  while (grouped->has_unfinished()) grouped->step();
  EXPECT_EQ(grouped->request(served).finish_reason, FinishReason::Length) << grouped->request(served).error;
}

// The prefix cache beside the window group: a page offered while its window block is still held
// keeps that block, so a later request (a conversation's next turn, the same long prompt again)
// adopts the prefix with its window; outputs equal those without a cache and with full KV.
TEST(WindowPageGroup, PrefixCacheHitsAdoptTheWindowKeptWithThePages) {
  auto engine_with = [](bool window_pages, bool cache) {
    EngineConfig config = gptoss_config(window_pages);
    if (cache) config.plugins.push_back({"prefix_cache", "", "", false, ""});
    return Engine::from_config(config);
  };
  std::mt19937 rng(5);
  const std::vector<int32_t> first_turn = random_prompt(rng, 35), long_prompt = random_prompt(rng, 200);
  const std::vector<int32_t> user_reply = random_prompt(rng, 10);
  auto conversation = [&](Engine& engine) {
    std::vector<std::vector<int32_t>> outputs;
    for (const auto& prompt : {first_turn, long_prompt})
      outputs.push_back(run_all(engine, {prompt}, greedy(30)).outputs[0]);
    std::vector<int32_t> next_turn = first_turn;
    next_turn.insert(next_turn.end(), outputs[0].begin(), outputs[0].end());
    next_turn.insert(next_turn.end(), user_reply.begin(), user_reply.end());
    outputs.push_back(run_all(engine, {next_turn}, greedy(30)).outputs[0]);
    outputs.push_back(run_all(engine, {long_prompt}, greedy(30)).outputs[0]);
    return outputs;
  };
  auto cached = engine_with(true, true);
  const auto with_cache = conversation(*cached);
  // The next turn's 75-token prompt hits 64 tokens (through block 3, offered while decoding); the
  // long prompt again hits 192 (through block 11, offered with its last chunk).
  EXPECT_EQ(cached->metrics().prefix_cache.hit_tokens, 64 + 192);
  auto plain = engine_with(true, false);
  const auto without_cache = conversation(*plain);
  EXPECT_EQ(with_cache, without_cache);
  auto full = engine_with(false, true);
  EXPECT_EQ(conversation(*full), with_cache);
}

}  // namespace
}  // namespace drift
