// The KV contract under speculation, soaked: 1,000 requests per capacity policy with random
// prompts, random draft trees from oracle providers of different corruption and branching
// (chosen per request, some requests with speculation off), random aborts, and a KV cache small
// enough to force preemption. check_integrity() runs after every step; at the end no page is
// leaked; every completed output equals its non-speculative reference (the fake executor reads
// every token back through the block table, so a wrong compaction, rewind or mask changes the
// output); every aborted output is a prefix of it. Also: EOS, a stop token and max_new_tokens
// falling inside an accepted run cut it exactly, with nothing past the cut streamed.
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "core/engine.h"
#include "support/fake_executor.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kVocab = 64;
constexpr int64_t kBlock = 4;

struct Request {
  std::vector<int32_t> prompt;
  SamplingParams params;
  std::vector<int32_t> reference;  // the non-speculative continuation
};

// An engine around the fake executor with oracle providers replaying `reference_file`.
std::unique_ptr<Engine> make_engine(const std::string& policy, int64_t pages, const std::string& reference_file,
                                    std::vector<int32_t> eos = {}) {
  EngineOptions o;
  o.capacity_policy = policy;
  o.num_pages = pages;
  o.block_size = kBlock;
  o.limits = {8, 24, 512};
  o.eos_ids = std::move(eos);
  o.check_kv_integrity = true;
  o.speculation.max_draft_tokens = 12;
  auto engine = std::make_unique<Engine>(o, std::make_unique<test::FakeExecutor>(kVocab, pages, kBlock));
  EngineConfig c;
  c.plugins = {test::oracle_entry("chain", reference_file, {0.2, 1, 6, 1}),
               test::oracle_entry("tree", reference_file, {0.5, 3, 4, 2}),
               test::oracle_entry("noisy", reference_file, {1.0, 2, 3, 3})};
  c = test::with_speculation(c, "tree", 12);
  engine->enable_plugins(c, test::FakeExecutor::model_config(kVocab), SpecialTokens{});
  return engine;
}

std::vector<Request> random_requests(int n, std::mt19937& rng) {
  std::vector<Request> out;
  const char* providers[] = {"", "chain", "noisy", "off"};
  for (int i = 0; i < n; ++i) {
    Request r;
    r.prompt.resize(1 + rng() % 20);
    for (auto& t : r.prompt) t = static_cast<int32_t>(rng() % kVocab);
    r.params.max_new_tokens = 1 + rng() % 30;
    r.params.speculative = providers[rng() % 4];
    r.reference = test::FakeExecutor::reference_continuation(r.prompt, r.params.max_new_tokens, kVocab);
    out.push_back(r);
  }
  return out;
}

std::string reference_file_for(const std::vector<Request>& requests) {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<test::RunResult> runs;
  for (const auto& r : requests) {
    prompts.push_back(r.prompt);
    runs.emplace_back().output = r.reference;
  }
  return test::write_reference(test::make_temp_dir("soak"), prompts, runs);
}

class KvSoakTest : public ::testing::TestWithParam<const char*> {};

TEST_P(KvSoakTest, ThousandRequestsWithRandomTreesAbortsAndPreemption) {
  std::mt19937 rng(2024);
  const std::vector<Request> requests = random_requests(1000, rng);
  const int64_t pages = 26;  // two or three requests at a time: preemption (or waiting) all the time
  auto engine = make_engine(GetParam(), pages, reference_file_for(requests));
  std::map<int64_t, size_t> index;  // request id -> requests[i]
  std::set<int64_t> aborted;
  std::map<int64_t, std::vector<int32_t>> streamed;
  size_t next = 0;
  while (next < requests.size() || engine->has_unfinished()) {
    for (int k = 0; k < 3 && next < requests.size(); ++k, ++next)  // requests keep arriving
      index[engine->add_request(requests[next].prompt, requests[next].params)] = next;
    if (rng() % 23 == 0 && !engine->scheduler().running().empty()) {  // abort someone mid-flight
      const int64_t victim = engine->scheduler().running()[rng() % engine->scheduler().running().size()]->id;
      engine->abort(victim);
      aborted.insert(victim);
    }
    for (const RequestOutput& out : engine->step())  // check_integrity() runs inside every step
      streamed[out.id].insert(streamed[out.id].end(), out.new_tokens.begin(), out.new_tokens.end());
  }
  EXPECT_EQ(engine->kv().num_free_pages(), pages) << "pages leaked";
  EXPECT_EQ(engine->kv().num_sequences(), 0);
  const EngineMetrics& m = engine->metrics();
  int64_t completed = 0;
  for (const auto& [id, i] : index) {
    const Sequence& seq = engine->request(id);
    const std::vector<int32_t>& ref = requests[i].reference;
    EXPECT_EQ(streamed[id], seq.output) << "request " << id;
    if (aborted.count(id)) {
      EXPECT_TRUE(std::equal(seq.output.begin(), seq.output.end(), ref.begin())) << "aborted request " << id;
      continue;
    }
    ++completed;
    EXPECT_EQ(seq.output, ref) << "request " << id << " (" << requests[i].params.speculative << ")";
    const SpeculationStats& s = seq.stats.speculation;
    EXPECT_EQ(s.draft_tokens, s.accepted_tokens + s.rewound_tokens);
    int64_t committed = 0;
    for (int32_t n : s.committed_per_step) committed += n;
    EXPECT_EQ(committed, static_cast<int64_t>(seq.output.size())) << "output = sum of tokens committed per step";
  }
  EXPECT_EQ(m.speculation.draft_tokens, m.speculation.accepted_tokens + m.speculation.rewound_tokens);
  EXPECT_GT(m.speculation.accepted_tokens, 1000) << "drafts must really be accepted";
  EXPECT_GT(m.speculation.rewound_tokens, 1000) << "and rejected";
  if (std::string(GetParam()) == "max_utilization") {
    EXPECT_GT(m.preemptions, 0);
  }
  std::printf(
      "[soak %s] %ld completed, %zu aborted, %ld steps, %ld preemptions, draft %ld = accepted %ld + rewound %ld, "
      "acceptance length %.3f\n",
      GetParam(), static_cast<long>(completed), aborted.size(), static_cast<long>(m.steps),
      static_cast<long>(m.preemptions), static_cast<long>(m.speculation.draft_tokens),
      static_cast<long>(m.speculation.accepted_tokens), static_cast<long>(m.speculation.rewound_tokens),
      m.speculation.acceptance_length());
}

INSTANTIATE_TEST_SUITE_P(Policies, KvSoakTest, ::testing::Values("max_utilization", "guaranteed_no_evict"));

// ---- Exact truncation inside an accepted run (seed 002 B4) ---------------------------------

struct Truncation : ::testing::Test {
  std::vector<int32_t> prompt = {5, 9, 14, 3, 22, 7};
  std::vector<int32_t> reference = test::FakeExecutor::reference_continuation(prompt, 40, kVocab);

  // Runs the one request with a perfect oracle of depth 6: every draft is accepted whole.
  test::RunResult run(const SamplingParams& params, std::vector<int32_t> eos = {}) {
    std::vector<test::RunResult> refs(1);
    refs[0].output = reference;
    const std::string file = test::write_reference(test::make_temp_dir("cut"), {prompt}, refs);
    EngineOptions o;
    o.num_pages = 64;
    o.block_size = kBlock;
    o.eos_ids = std::move(eos);
    o.check_kv_integrity = true;
    o.speculation.max_draft_tokens = 6;
    Engine engine(o, std::make_unique<test::FakeExecutor>(kVocab, 64, kBlock));
    EngineConfig c;
    c.plugins = {test::oracle_entry("oracle", file, {0.0, 1, 6, 0})};
    engine.enable_plugins(test::with_speculation(c, "oracle", 6), test::FakeExecutor::model_config(kVocab),
                          SpecialTokens{});
    test::RunResult r = test::run_batch(engine, {prompt}, {params})[0];
    EXPECT_EQ(engine.kv().num_free_pages(), 64);
    EXPECT_EQ(r.streamed, r.output) << "nothing past the cut is streamed";
    return r;
  }
  // The first index >= 3 whose token did not occur before it (a clean EOS / stop id).
  size_t fresh_index() const {
    for (size_t i = 3; i < reference.size(); ++i)
      if (std::find(reference.begin(), reference.begin() + i, reference[i]) == reference.begin() + i) return i;
    return 0;
  }
};

TEST_F(Truncation, EosInsideAnAcceptedRun) {
  const size_t at = fresh_index();
  ASSERT_GT(at, 0u);
  SamplingParams p;
  p.max_new_tokens = 40;
  const test::RunResult r = run(p, {reference[at]});
  EXPECT_EQ(r.output, std::vector<int32_t>(reference.begin(), reference.begin() + at + 1));
  EXPECT_EQ(r.finish_reason, FinishReason::Stop);
  EXPECT_GT(r.stats.speculation.accepted_tokens, 0) << "the cut must fall inside accepted runs";
}

TEST_F(Truncation, StopTokenInsideAnAcceptedRun) {
  const size_t at = fresh_index();
  SamplingParams p;
  p.max_new_tokens = 40;
  p.stop_token_ids = {reference[at]};
  const test::RunResult r = run(p);
  EXPECT_EQ(r.output, std::vector<int32_t>(reference.begin(), reference.begin() + at + 1));
  EXPECT_EQ(r.finish_reason, FinishReason::Stop);
  EXPECT_GT(r.stats.speculation.accepted_tokens, 0) << "the cut must fall inside accepted runs";
}

TEST_F(Truncation, MaxNewTokensInsideAnAcceptedRun) {
  for (int64_t n : {1, 2, 5, 9, 13}) {
    SamplingParams p;
    p.max_new_tokens = n;
    const test::RunResult r = run(p);
    EXPECT_EQ(r.output, std::vector<int32_t>(reference.begin(), reference.begin() + n)) << n;
    EXPECT_EQ(r.finish_reason, FinishReason::Length);
    if (n >= 5) {
      EXPECT_GT(r.stats.speculation.accepted_tokens, 0) << n;
    }
  }
}

}  // namespace
}  // namespace drift
