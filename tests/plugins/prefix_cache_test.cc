// The prefix_cache plugin through the engine, around the fake executor (which reads every token
// back through the block table, so a page adopted with the wrong contents changes the output):
// hits give exactly the uncached outputs at every page boundary, for a prompt that is entirely
// cached, beside a sequence still writing its tail page, across multi-turn continuations; a
// request aborted mid-prefill offers nothing; salts isolate; opting out keeps a request away
// from the cache; a pool too small for the working set keeps running (eviction, capacity); and
// a randomized soak with speculation, aborts, preemption and check_integrity() every step ends
// with every output equal to its reference and no page leaked.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/engine.h"
#include "core/error.h"
#include "support/fake_executor.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using Tokens = std::vector<int32_t>;

constexpr int64_t kVocab = 64;
constexpr int64_t kBlock = 4;

Tokens reference(const Tokens& prompt, int64_t n) {
  return test::FakeExecutor::reference_continuation(prompt, n, kVocab);
}

Tokens concat(Tokens a, const Tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The engine a test runs: the prefix cache always, the rest as chained setters say.
struct EngineSetup {
  std::string policy = "guaranteed_no_evict";
  int64_t pages = 128;
  int64_t max_num_tokens = 24;
  std::string cache_settings;
  std::string oracle_reference;  // non-empty: speculation through oracle providers

  EngineSetup& with_policy(std::string p) {
    policy = std::move(p);
    return *this;
  }
  EngineSetup& with_pages(int64_t n) {
    pages = n;
    return *this;
  }
  EngineSetup& with_token_budget(int64_t n) {
    max_num_tokens = n;
    return *this;
  }
  EngineSetup& with_cache_settings(std::string toml) {
    cache_settings = std::move(toml);
    return *this;
  }
  EngineSetup& with_oracle(std::string reference) {
    oracle_reference = std::move(reference);
    return *this;
  }
};

std::unique_ptr<Engine> make_engine(const EngineSetup& s) {
  EngineOptions o;
  o.capacity_policy = s.policy;
  o.num_pages = s.pages;
  o.block_size = kBlock;
  o.limits = {8, s.max_num_tokens, 512};
  o.check_kv_integrity = true;
  o.speculation.max_draft_tokens = s.oracle_reference.empty() ? 0 : 8;
  auto engine = std::make_unique<Engine>(o, std::make_unique<test::FakeExecutor>(kVocab, s.pages, kBlock));
  EngineConfig c;
  c.plugins.push_back(test::prefix_cache_entry(s.cache_settings));
  if (!s.oracle_reference.empty()) {
    c.plugins.push_back(test::oracle_entry("chain", s.oracle_reference, {0.3, 1, 5, 1}));
    c.plugins.push_back(test::oracle_entry("tree", s.oracle_reference, {0.5, 3, 3, 2}));
    c = test::with_speculation(c, "tree", 8);
  }
  engine->enable_plugins(c, test::FakeExecutor::model_config(kVocab), SpecialTokens{});
  return engine;
}

SamplingParams greedy(int64_t n, std::string salt = "", bool cache = true) {
  SamplingParams p;
  p.max_new_tokens = n;
  p.cache_salt = std::move(salt);
  p.prefix_cache = cache;
  return p;
}

// Runs one request alone to completion; its output and the tokens it adopted from the cache.
struct Ran {
  Tokens output;
  int64_t cached = 0;
};
Ran run_one(Engine& engine, const Tokens& prompt, const SamplingParams& params) {
  const int64_t id = engine.add_request(prompt, params);
  while (engine.has_unfinished()) engine.step();
  const Sequence& seq = engine.request(id);
  EXPECT_NE(seq.finish_reason, FinishReason::Error) << seq.error;
  return {seq.output, seq.stats.cached_tokens};
}

TEST(PrefixCache, ASecondIdenticalPromptAdoptsTheFirstsFullPages) {
  auto engine = make_engine(EngineSetup());
  const Tokens prompt = {5, 9, 14, 3, 22, 7, 1, 8, 40, 2};  // two full pages and two tokens
  const Ran first = run_one(*engine, prompt, greedy(6));
  const Ran second = run_one(*engine, prompt, greedy(6));
  EXPECT_EQ(first.output, reference(prompt, 6));
  EXPECT_EQ(second.output, first.output);
  EXPECT_EQ(first.cached, 0);
  EXPECT_EQ(second.cached, 8);
  const PrefixCacheMetrics& m = engine->metrics().prefix_cache;
  EXPECT_EQ(m.queries, 2);
  EXPECT_EQ(m.hits, 1);
  EXPECT_EQ(m.query_tokens, 20);
  EXPECT_EQ(m.hit_tokens, 8);
  EXPECT_DOUBLE_EQ(m.hit_rate(), 0.4);
  // The first request committed 15 tokens of KV (10 prompt + 5 outputs): three full pages.
  EXPECT_EQ(m.pages_held, 3);
  EXPECT_EQ(engine->kv().num_free_pages(), 128 - 3);
  EXPECT_EQ(engine->reset_prefix_cache(), 3);
  EXPECT_EQ(engine->kv().num_free_pages(), 128);
  EXPECT_EQ(engine->metrics().prefix_cache.pages_held, 0);
}

// A second prompt sharing the first one's first L tokens: the cached part is the full pages in
// those L tokens, and never the page holding the last prompt token.
TEST(PrefixCache, PageBoundariesExactlyAPageOneShortOneOverAndEntirelyCached) {
  const Tokens base = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
  struct Case {
    size_t shared;
    Tokens tail;
    int64_t cached;
  };
  const std::vector<Case> cases = {
      {8, {60, 61, 62}, 8},  // the shared prefix is exactly two pages
      {7, {60, 61, 62}, 4},  // one token short of two pages
      {9, {60, 61, 62}, 8},  // one token over
      {16, {}, 12},          // the whole prompt is cached; its last page is recomputed
      {12, {}, 8},           // the same, the prompt three pages long
      {5, {}, 4},            // one page and a token
      {4, {}, 0},            // one page exactly: its last token must be computed, so no hit
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shared);
    auto engine = make_engine(EngineSetup());
    run_one(*engine, base, greedy(4));
    const Tokens prompt = concat(Tokens(base.begin(), base.begin() + static_cast<int64_t>(c.shared)), c.tail);
    const Ran ran = run_one(*engine, prompt, greedy(6));
    EXPECT_EQ(ran.cached, c.cached);
    EXPECT_EQ(ran.output, reference(prompt, 6));
  }
}

TEST(PrefixCache, AHitBesideASequenceStillWritingItsTailPage) {
  auto engine = make_engine(EngineSetup());
  const Tokens a_prompt = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
  const int64_t a = engine->add_request(a_prompt, greedy(20));
  while (engine->request(a).output.empty()) engine->step();  // A's prompt is in: pages 0 and 1 offered
  ASSERT_EQ(engine->request(a).stats.cached_tokens, 0);
  const Tokens b_prompt = concat(Tokens(a_prompt.begin(), a_prompt.begin() + 8), {1, 2, 3});
  const int64_t b = engine->add_request(b_prompt, greedy(10));
  engine->step();  // B adopts pages 0 and 1 while A writes its tail page 2 beside them
  EXPECT_EQ(engine->kv().ref_count(engine->kv().block_table(engine->request(a).kv)[0]), 3) << "A, B and the cache";
  while (engine->has_unfinished()) engine->step();
  EXPECT_EQ(engine->request(b).stats.cached_tokens, 8);
  EXPECT_EQ(engine->request(a).output, reference(a_prompt, 20));
  EXPECT_EQ(engine->request(b).output, reference(b_prompt, 10));
}

TEST(PrefixCache, MultiTurnContinuationsHitTheirOwnEarlierOutput) {
  auto engine = make_engine(EngineSetup());
  Tokens conversation = {7, 7, 1, 2, 3, 4, 5};
  int64_t cached_total = 0;
  for (int turn = 0; turn < 4; ++turn) {
    const Ran ran = run_one(*engine, conversation, greedy(9));
    EXPECT_EQ(ran.output, reference(conversation, 9)) << "turn " << turn;
    if (turn > 0) {
      EXPECT_GE(ran.cached, static_cast<int64_t>(conversation.size()) - 12) << "turn " << turn;
    }
    cached_total += ran.cached;
    conversation = concat(concat(conversation, ran.output), {30 + turn, 31 + turn});  // the next user turn
  }
  EXPECT_GT(cached_total, 40);
}

TEST(PrefixCache, ARequestAbortedMidPrefillOffersNothing) {
  auto engine = make_engine(EngineSetup().with_token_budget(8));
  Tokens prompt(40);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i % kVocab);
  const int64_t id = engine->add_request(prompt, greedy(4));
  engine->step();
  engine->step();
  engine->step();  // 24 of 40 prompt tokens computed: six full pages of final KV, not offered
  ASSERT_TRUE(engine->request(id).output.empty());
  engine->abort(id);
  engine->step();
  EXPECT_EQ(engine->metrics().prefix_cache.pages_held, 0);
  EXPECT_EQ(run_one(*engine, prompt, greedy(4)).cached, 0);
  EXPECT_EQ(engine->kv().num_free_pages() + engine->metrics().prefix_cache.pages_held, 128);
}

TEST(PrefixCache, DifferentSaltsNeverSharePagesAndOptingOutSkipsTheCache) {
  auto engine = make_engine(EngineSetup());
  const Tokens prompt = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1};
  EXPECT_EQ(run_one(*engine, prompt, greedy(4, "tenant-a")).cached, 0);
  EXPECT_EQ(run_one(*engine, prompt, greedy(4, "tenant-b")).cached, 0);
  EXPECT_EQ(run_one(*engine, prompt, greedy(4)).cached, 0);
  EXPECT_EQ(run_one(*engine, prompt, greedy(4, "tenant-a")).cached, 8);
  EXPECT_EQ(run_one(*engine, prompt, greedy(4, "tenant-b")).cached, 8);
  const int64_t held = engine->metrics().prefix_cache.pages_held;
  EXPECT_EQ(held, 3 * 3) << "one chain of three pages per salt";
  const PrefixCacheMetrics before = engine->metrics().prefix_cache;
  const Ran opted_out = run_one(*engine, prompt, greedy(4, "tenant-a", false));
  EXPECT_EQ(opted_out.cached, 0);
  EXPECT_EQ(opted_out.output, reference(prompt, 4));
  EXPECT_EQ(engine->metrics().prefix_cache.queries, before.queries) << "an opted-out request asks nothing";
  EXPECT_EQ(engine->metrics().prefix_cache.pages_held, held) << "and offers nothing";
}

TEST(PrefixCache, ASaltWithANulByteIsRefusedNamingTheField) {
  auto engine = make_engine(EngineSetup());
  const int64_t id = engine->add_request({1, 2, 3}, greedy(2, std::string("a\0b", 3)));
  EXPECT_EQ(engine->request(id).finish_reason, FinishReason::Error);
  EXPECT_THAT(engine->request(id).error, ::testing::HasSubstr("cache_salt contains a NUL byte"));
}

TEST(PrefixCache, ResetIsRefusedWhileRequestsRun) {
  auto engine = make_engine(EngineSetup());
  engine->add_request({1, 2, 3, 4, 5}, greedy(4));
  EXPECT_THROW(engine->reset_prefix_cache(), DriftError);
}

// A pool far smaller than the distinct prefixes that pass through it: pages are evicted, nothing
// deadlocks, every request finishes with its reference output.
class PrefixCachePressure : public ::testing::TestWithParam<const char*> {};

TEST_P(PrefixCachePressure, ATooSmallPoolEvictsAndNeverStalls) {
  const int64_t pages = 20;
  auto engine = make_engine(EngineSetup().with_policy(GetParam()).with_pages(pages));
  std::mt19937 rng(5);
  std::map<int64_t, Tokens> prompts;
  std::vector<Tokens> systems;
  for (int s = 0; s < 6; ++s) {
    Tokens system(8 + rng() % 12);
    for (auto& t : system) t = static_cast<int32_t>(rng() % kVocab);
    systems.push_back(system);
  }
  int64_t steps = 0;
  auto drain = [&] {
    while (engine->has_unfinished() && ++steps < 5000) engine->step();
  };
  for (int i = 0; i < 60; ++i) {
    Tokens prompt = concat(systems[rng() % systems.size()], {static_cast<int32_t>(rng() % kVocab)});
    prompts[engine->add_request(prompt, greedy(1 + rng() % 12))] = prompt;
    if (i % 4 == 3) drain();  // four at a time
  }
  drain();
  ASSERT_LT(steps, 5000) << "the engine stalled";
  for (const auto& [id, prompt] : prompts) {
    const Sequence& seq = engine->request(id);
    ASSERT_NE(seq.finish_reason, FinishReason::Error) << seq.error;
    EXPECT_EQ(seq.output, reference(prompt, seq.params.max_new_tokens)) << "request " << id;
  }
  const PrefixCacheMetrics& m = engine->metrics().prefix_cache;
  EXPECT_GT(m.hits, 10);
  EXPECT_GT(m.evicted_pages, 0);
  EXPECT_EQ(engine->kv().num_free_pages() + m.pages_held, pages);
  engine->reset_prefix_cache();
  EXPECT_EQ(engine->kv().num_free_pages(), pages);
}

INSTANTIATE_TEST_SUITE_P(Policies, PrefixCachePressure, ::testing::Values("max_utilization", "guaranteed_no_evict"));

// Under guaranteed_no_evict a request needs its worst case beside what running requests were
// promised; when cached pages stand in the way, admission asks for all of them at once and
// the request runs in that very step.
TEST(PrefixCache, AdmissionTakesAllTheCachedPagesItNeedsInOneStep) {
  auto engine = make_engine(EngineSetup().with_pages(20));
  for (int32_t r = 0; r < 3; ++r) {  // three finished requests leave 12 cached pages
    Tokens prompt(16);
    for (int32_t i = 0; i < 16; ++i) prompt[i] = 1 + r * 16 + i;
    run_one(*engine, prompt, greedy(1));
  }
  ASSERT_EQ(engine->metrics().prefix_cache.pages_held, 12);
  const int64_t a = engine->add_request({60, 61, 62, 63, 60}, greedy(19));  // worst case 6 pages
  engine->step();
  ASSERT_EQ(engine->request(a).status, SequenceStatus::Running);
  // 6 free pages, 4 promised to A: B (worst case 5 pages) is 3 short.
  const int64_t b = engine->add_request({50, 51, 52, 53, 54, 55}, greedy(14));
  engine->step();
  EXPECT_EQ(engine->request(b).status, SequenceStatus::Running);
  EXPECT_EQ(engine->metrics().prefix_cache.evicted_pages, 3);
  while (engine->has_unfinished()) engine->step();
  EXPECT_EQ(engine->request(b).output, reference({50, 51, 52, 53, 54, 55}, 14));
}

TEST(PrefixCache, CapacityPagesBoundsWhatTheCacheHoldsLeastRecentlyUsedFirst) {
  auto engine = make_engine(EngineSetup().with_cache_settings("capacity_pages = 3\n"));
  const Tokens a = {1, 1, 1, 1, 2, 2, 2, 2, 3};
  const Tokens b = {4, 4, 4, 4, 5, 5, 5, 5, 6};
  run_one(*engine, a, greedy(1));  // a's two prompt pages
  EXPECT_EQ(engine->metrics().prefix_cache.pages_held, 2);
  run_one(*engine, b, greedy(1));  // b's two: a's last page goes to make room
  EXPECT_EQ(engine->metrics().prefix_cache.pages_held, 3);
  EXPECT_EQ(engine->metrics().prefix_cache.evicted_pages, 1);
  EXPECT_EQ(run_one(*engine, a, greedy(3)).cached, 4) << "a's first page is still there";
  // a's second page came back, and b's second page (now the least recently used) made room.
  EXPECT_EQ(engine->metrics().prefix_cache.evicted_pages, 2);
  EXPECT_EQ(run_one(*engine, b, greedy(3)).cached, 4);
  EXPECT_EQ(engine->metrics().prefix_cache.pages_held, 3);
}

TEST(PrefixCache, BadSettingsStopTheEngineNamingTheKey) {
  for (const std::string bad : {"capacity_pages = -1\n", "capacity_fraction = 1.5\n",
                                "capacity_pages = 4\ncapacity_fraction = 0.5\n", "salt = 3\n"}) {
    SCOPED_TRACE(bad);
    try {
      make_engine(EngineSetup().with_cache_settings(bad));
      ADD_FAILURE() << "the engine started";
    } catch (const DriftError& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("plugin 'prefix_cache' could not be loaded"));
    }
  }
}

// ---- The soak ---------------------------------------------------------------------------------

struct SoakRequest {
  Tokens prompt;
  SamplingParams params;
  Tokens reference;
};

// Prompts built from a few shared system prompts (some extended by an earlier request's
// reference output: multi-turn), random user suffixes, two salts and some opt-outs.
std::vector<SoakRequest> soak_requests(int n, std::mt19937& rng) {
  std::vector<Tokens> systems;
  for (int s = 0; s < 5; ++s) {
    Tokens system(3 + rng() % 18);
    for (auto& t : system) t = static_cast<int32_t>(rng() % kVocab);
    systems.push_back(system);
  }
  std::vector<SoakRequest> out;
  const char* providers[] = {"", "chain", "off", "off"};
  for (int i = 0; i < n; ++i) {
    SoakRequest r;
    r.prompt = systems[rng() % systems.size()];
    if (!out.empty() && rng() % 4 == 0) {  // a later turn of an earlier conversation
      const SoakRequest& earlier = out[rng() % out.size()];
      r.prompt = concat(earlier.prompt, earlier.reference);
    }
    for (int k = static_cast<int>(rng() % 6); k > 0; --k) r.prompt.push_back(static_cast<int32_t>(rng() % kVocab));
    if (r.prompt.size() > 100) r.prompt.resize(100);  // the pool must hold any one request
    r.params = greedy(1 + rng() % 40, rng() % 3 == 0 ? "t1" : "", rng() % 10 != 0);
    r.params.speculative = providers[rng() % 4];
    r.reference = reference(r.prompt, r.params.max_new_tokens);
    out.push_back(r);
  }
  return out;
}

std::string oracle_file(const std::vector<SoakRequest>& requests) {
  std::vector<Tokens> prompts;
  std::vector<test::RunResult> runs;
  for (const auto& r : requests) {
    prompts.push_back(r.prompt);
    runs.emplace_back().output = r.reference;
  }
  return test::write_reference(test::make_temp_dir("prefix-soak"), prompts, runs);
}

class PrefixCacheSoak : public ::testing::TestWithParam<const char*> {};

TEST_P(PrefixCacheSoak, SharedPrefixesAbortsPreemptionAndSpeculation) {
  std::mt19937 rng(77);
  const std::vector<SoakRequest> requests = soak_requests(600, rng);
  const int64_t pages = 36;  // one long request, or a few short ones: preemption and eviction
  auto engine = make_engine(
      EngineSetup().with_policy(GetParam()).with_pages(pages).with_token_budget(16).with_oracle(oracle_file(requests)));
  std::map<int64_t, size_t> index;
  std::set<int64_t> aborted;
  int64_t mid_prefill_aborts = 0;
  size_t next = 0;
  while (next < requests.size() || engine->has_unfinished()) {
    for (int k = 0; k < 3 && next < requests.size(); ++k, ++next)
      index[engine->add_request(requests[next].prompt, requests[next].params)] = next;
    const auto& running = engine->scheduler().running();
    if (rng() % 17 == 0 && !running.empty()) {
      const Sequence* victim = running[rng() % running.size()];
      mid_prefill_aborts += victim->output.empty() ? 1 : 0;
      aborted.insert(victim->id);
      engine->abort(victim->id);
    }
    engine->step();  // check_integrity() runs inside every step
  }
  for (const auto& [id, i] : index) {
    const Sequence& seq = engine->request(id);
    const Tokens& ref = requests[i].reference;
    if (aborted.count(id)) {
      EXPECT_TRUE(std::equal(seq.output.begin(), seq.output.end(), ref.begin())) << "aborted request " << id;
      continue;
    }
    ASSERT_NE(seq.finish_reason, FinishReason::Error) << seq.error;
    EXPECT_EQ(seq.output, ref) << "request " << id;
  }
  const EngineMetrics& m = engine->metrics();
  EXPECT_EQ(engine->kv().num_sequences(), 0);
  EXPECT_EQ(engine->kv().num_free_pages() + m.prefix_cache.pages_held, pages) << "pages leaked";
  const int64_t held = m.prefix_cache.pages_held;
  EXPECT_EQ(engine->reset_prefix_cache(), held);
  EXPECT_EQ(engine->kv().num_free_pages(), pages) << "pages leaked";
  EXPECT_GT(m.prefix_cache.hits, 100);
  EXPECT_GT(m.prefix_cache.evicted_pages, 0);
  EXPECT_GT(m.speculation.accepted_tokens, 100);
  EXPECT_GT(mid_prefill_aborts, 0);
  if (std::string(GetParam()) == "max_utilization") {
    EXPECT_GT(m.preemptions, 0);
  }
  std::printf(
      "[prefix soak %s] %zu requests, %zu aborted (%ld mid-prefill), %ld steps, %ld preemptions, "
      "%ld queries, %ld hits, hit rate %.3f, %ld hit tokens, %ld evicted pages, %ld accepted draft tokens\n",
      GetParam(), index.size(), aborted.size(), static_cast<long>(mid_prefill_aborts), static_cast<long>(m.steps),
      static_cast<long>(m.preemptions), static_cast<long>(m.prefix_cache.queries),
      static_cast<long>(m.prefix_cache.hits), m.prefix_cache.hit_rate(), static_cast<long>(m.prefix_cache.hit_tokens),
      static_cast<long>(m.prefix_cache.evicted_pages), static_cast<long>(m.speculation.accepted_tokens));
}

INSTANTIATE_TEST_SUITE_P(Policies, PrefixCacheSoak, ::testing::Values("max_utilization", "guaranteed_no_evict"));

}  // namespace
}  // namespace drift
