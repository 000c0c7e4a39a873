// The specpv verification policy (SpecPV) through the engine on the CPU backend, stories260K:
//  - when sink + retrieval + window cover the whole context, its partial views are the whole
//    block table and outputs equal full verification's exactly (partial views really ran);
//  - with small budgets, every refresh's retrieved blocks equal a brute-force selection written
//    here from the engine's own KV cache and the refresh forward's queries;
//  - batched with preemption: per-sequence state, KV integrity after every step; token agreement
//    with full verification is reported (SpecPV is lossy by design);
//  - fidelity on the real pair (stories260K + its EAGLE-3 head) with prompts of a few thousand
//    tokens, reported;
//  - bad settings (a block size other than the KV page size, unknown keys) are load errors.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>

#include <unistd.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine.h"
#include "core/error.h"
#include "core/model/model_runner.h"
#include "core/plugin/engine_plugins.h"
#include "inspect.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using Tokens = std::vector<int32_t>;
using ::testing::HasSubstr;

struct Budgets {
  int64_t block_size = 4;
  int64_t sinks = 1, retrieval = 6, window = 4, buffer = 8, threshold = 64, interval = 4;
  std::string toml() const {
    return fmt::format(
        "block_size = {}\nn_sink_blocks = {}\nn_retrieval_blocks = {}\nn_window_blocks = {}\nn_spec_tokens_buf = {}\n"
        "partial_threshold = {}\nfull_refresh_interval = {}\n",
        block_size, sinks, retrieval, window, buffer, threshold, interval);
  }
};

PluginEntry specpv_entry(const std::string& settings) {
  PluginEntry e;
  e.name = "specpv";
  e.settings_toml = settings;
  return e;
}

// stories260K speculating with ngram; verified by `policy` ("full" or "specpv").
EngineConfig config(const std::string& policy, const Budgets& b, const std::string& model = "models/stories260K") {
  EngineConfig c;
  c.model.path = model.front() == '/' ? model : test::test_data_path(model);
  c.engine.max_batch_size = 8;
  c.engine.max_num_tokens = 512;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = b.block_size;
  c.kv_cache.num_pages = 4096;
  c.plugins = {test::ngram_entry(1, 2, 4), specpv_entry(b.toml())};
  c = test::with_speculation(c, "ngram", 6);
  c.speculative.verification = policy;
  return c;
}

SamplingParams greedy(int64_t n) { return test::greedy_ignoring_eos(n); }

// Story text of `length` tokens from the golden cases (prompts and their continuations, in
// turn from `offset`): real text, repetitive enough for n-gram drafts to be accepted.
Tokens story(int64_t length, size_t offset = 0) {
  Tokens pool;
  for (const auto& c : test::load_golden_cases(test::test_data_path("models/stories260K"))) {
    const Tokens s = c.sequence();
    pool.insert(pool.end(), s.begin() + 1, s.end());  // without BOS
  }
  Tokens out = {1};
  for (int64_t i = 1; i < length; ++i) out.push_back(pool[(offset + static_cast<size_t>(i)) % pool.size()]);
  return out;
}

struct Agreement {
  int64_t same = 0, total = 0, first_divergence = -1;
};

Agreement agreement(const std::vector<Tokens>& a, const std::vector<Tokens>& b) {
  Agreement g;
  int64_t offset = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t t = 0; t < a[i].size(); ++t) {
      const bool same = t < b[i].size() && a[i][t] == b[i][t];
      g.same += same;
      if (!same && g.first_divergence < 0) g.first_divergence = offset + static_cast<int64_t>(t);
    }
    g.total += static_cast<int64_t>(a[i].size());
    offset += static_cast<int64_t>(a[i].size());
  }
  return g;
}

std::vector<Tokens> run(const EngineConfig& c, const std::vector<Tokens>& prompts, int64_t n,
                        EngineMetrics* metrics = nullptr) {
  auto engine = Engine::from_config(c);
  auto outputs = test::outputs_of(test::run_batch(*engine, prompts, {greedy(n)}));
  if (metrics) *metrics = engine->metrics();
  return outputs;
}

TEST(SpecPV, BudgetsCoveringTheContextGiveFullVerificationsOutputsExactly) {
  Budgets whole;
  whole.retrieval = 100000;  // every candidate block
  whole.buffer = 100000;
  whole.interval = 100000;
  whole.threshold = 0;
  const std::vector<Tokens> prompts = {story(300), story(220, 500), story(180, 900)};
  const std::vector<Tokens> full = run(config("full", whole), prompts, 96);
  EngineMetrics m;
  EXPECT_EQ(run(config("specpv", whole), prompts, 96, &m), full);
  EXPECT_GT(m.verification.partial_views, 20);  // the outputs came through partial views
  EXPECT_GE(m.verification.full_views, 1);      // the first verification of each sequence refreshes
  EXPECT_DOUBLE_EQ(m.verification.attended_fraction(), 1.0);
}

// The engine's K at (layer, slot, kv head).
const float* key_at(const ModelRunner& runner, int64_t layer, int64_t slot, int64_t head) {
  const Tensor& k = runner.kv_layers()[layer].k;
  return k.as<float>() + (slot * k.dim(1) + head) * k.dim(2);
}

// Brute force: the candidates' scores for list (layer, head) from the engine's KV and the refresh
// forward's queries (still the executor's last forward), and the set the plugin should retrieve.
void expect_brute_force_retrieval(Engine& engine, const specpv_inspect_t& api, void* instance, int64_t seq,
                                  const Budgets& b) {
  const auto& runner = dynamic_cast<const ModelRunner&>(engine.executor());
  const ModelConfig& mc = runner.config();
  const std::vector<int32_t>& table = engine.kv().block_table(engine.request(seq).kv);
  const int64_t group = mc.num_heads / mc.num_kv_heads, d = mc.head_dim;
  for (int64_t layer = 0; layer < mc.num_layers; ++layer) {
    const Tensor* q = runner.captured_queries(static_cast<int32_t>(layer));
    ASSERT_NE(q, nullptr);
    const int64_t rows = q->dim(0);
    for (int64_t h = 0; h < mc.num_kv_heads; ++h) {
      int64_t bounds[3] = {0, 0, 0};
      std::vector<int64_t> got(4096);
      const int64_t n = api.retrieval(instance, seq, layer * mc.num_kv_heads + h, bounds, got.data(), 4096);
      ASSERT_GE(n, 0);
      got.resize(static_cast<size_t>(n));
      const int64_t buffer_block = bounds[0] / b.block_size, sink_end = std::min(b.sinks, buffer_block);
      const int64_t window_block = std::max(sink_end, buffer_block - b.window);
      ASSERT_EQ(bounds[1], window_block);
      ASSERT_EQ(bounds[2], buffer_block);
      std::vector<std::pair<double, int64_t>> scored;
      for (int64_t blk = sink_end; blk < window_block; ++blk) {
        std::vector<float> hi(d, -INFINITY), lo(d, INFINITY);
        for (int64_t i = 0; i < b.block_size; ++i) {
          const float* k = key_at(runner, layer, table[blk] * b.block_size + i, h);
          for (int64_t j = 0; j < d; ++j) hi[j] = std::max(hi[j], k[j]), lo[j] = std::min(lo[j], k[j]);
        }
        double score = 0.0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t g = 0; g < group; ++g) {
            const float* qv = q->as<float>() + r * q->dim(1) + (h * group + g) * d;
            double dot_hi = 0.0, dot_lo = 0.0;
            for (int64_t j = 0; j < d; ++j) dot_hi += qv[j] * hi[j], dot_lo += qv[j] * lo[j];
            score += std::max(dot_hi, dot_lo);
          }
        scored.push_back({score / static_cast<double>(rows * group), blk});
      }
      std::sort(scored.begin(), scored.end(), [](auto& x, auto& y) { return x.first > y.first; });
      const auto k = static_cast<size_t>(std::min<int64_t>(b.retrieval, static_cast<int64_t>(scored.size())));
      ASSERT_EQ(got.size(), k);
      std::vector<int64_t> expected;
      for (size_t i = 0; i < k; ++i) expected.push_back(scored[i].second);
      std::sort(expected.begin(), expected.end());
      // A tie at the cut (within float rounding) may go either way; anything else must match.
      const bool tie_at_cut = k < scored.size() && std::abs(scored[k - 1].first - scored[k].first) < 1e-4;
      if (!tie_at_cut) {
        EXPECT_EQ(got, expected) << "layer " << layer << " kv head " << h;
      }
    }
  }
}

TEST(SpecPV, RetrievedBlocksEqualABruteForceSelection) {
  const Budgets b;  // 1 sink + 6 retrieved + 4 window blocks of 4 tokens
  auto engine = Engine::from_config(config("specpv", b));
  const PluginHost::Extension inspect = engine->plugins()->host().extension("specpv", SPECPV_INSPECT_KEY);
  ASSERT_NE(inspect.table, nullptr);
  const auto* api = static_cast<const specpv_inspect_t*>(inspect.table);
  const int64_t seq = engine->add_request(story(320), greedy(120));
  // ABI 1.3's query_states, as the host serves it: the refresh forward's rows (root + tree), else none.
  const auto& query_states = engine->plugins()->host().callbacks().query_states;
  const auto& runner = dynamic_cast<const ModelRunner&>(engine->executor());
  int64_t checked = 0, without = 0;
  while (engine->has_unfinished()) {
    const int64_t before = api->refreshes(inspect.instance);
    engine->step();
    if (engine->request(seq).finished()) break;
    drift_tensor_t q{};
    const drift_status_t status = query_states(seq, 2, &q);
    if (api->refreshes(inspect.instance) > before) {
      expect_brute_force_retrieval(*engine, *api, inspect.instance, seq, b);
      ASSERT_EQ(status, DRIFT_OK);
      const Tensor* kept = runner.captured_queries(2);
      ASSERT_EQ(q.ndim, 3);
      EXPECT_EQ(q.shape[0], kept->dim(0));
      EXPECT_EQ(q.shape[1] * q.shape[2], kept->dim(1));
      EXPECT_EQ(q.shape[2], runner.config().head_dim);
      EXPECT_EQ(q.data, kept->data());
      ++checked;
    } else {
      EXPECT_EQ(status, DRIFT_ERROR_NOT_FOUND);  // a partial or plain step keeps no queries
      ++without;
    }
  }
  EXPECT_GT(without, 0);
  EXPECT_GE(checked, 3);
  EXPECT_GT(engine->metrics().verification.partial_views, 0);
  EXPECT_LT(engine->metrics().verification.attended_fraction(), 0.6);
}

TEST(SpecPV, BatchedWithPreemptionReportsAgreementWithFullVerification) {
  const Budgets b;
  std::vector<Tokens> prompts;
  for (int i = 0; i < 8; ++i) prompts.push_back(story(200 + 20 * i, 131 * static_cast<size_t>(i)));
  auto tight = [&](EngineConfig c) {
    c.kv_cache.num_pages = 420;  // fewer than 8 sequences' worst case: max_utilization preempts
    c.scheduler.policy = "max_utilization";
    return c;
  };
  EngineMetrics full_metrics, m;
  const std::vector<Tokens> full = run(tight(config("full", b)), prompts, 96, &full_metrics);
  const std::vector<Tokens> partial = run(tight(config("specpv", b)), prompts, 96, &m);
  EXPECT_GT(m.preemptions, 0);
  EXPECT_GT(m.verification.partial_views, 50);
  for (const Tokens& out : partial) EXPECT_EQ(out.size(), 96u);
  const Agreement g = agreement(partial, full);
  std::cout << fmt::format(
      "[specpv] stories260K, 8 prompts of 200-340 tokens, budgets 1+6+4 blocks of 4: {}/{} "
      "tokens ({:.1f}%) equal to full verification, first divergence at output token {}; "
      "partial views read {:.1f}% of their context\n",
      g.same, g.total, 100.0 * g.same / g.total, g.first_divergence, 100.0 * m.verification.attended_fraction());
  EXPECT_GT(g.same, 0);
}

// A copy of a checkpoint folder whose config.json allows `positions` (weights linked, not copied).
std::string with_positions(const std::string& dir, const std::string& name, int64_t positions) {
  const std::filesystem::path out =
      std::filesystem::temp_directory_path() / fmt::format("specpv-{}-{}", name, ::getpid());
  std::filesystem::create_directories(out);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const auto target = out / entry.path().filename();
    std::filesystem::remove(target);
    if (entry.path().filename() != "config.json") std::filesystem::create_symlink(entry.path(), target);
  }
  std::ifstream in(dir + "/config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config["max_position_embeddings"] = positions;
  std::ofstream(out / "config.json") << config.dump(1);
  return out.string();
}

// The real pair: stories260K verified by specpv against full verification, drafts from its trained
// EAGLE-3 head (chains of 4); agreement and acceptance reported, the run's shape asserted.
Agreement eagle3_fidelity(const std::string& model, const std::string& head, const std::vector<Tokens>& prompts,
                          const Budgets& b, int64_t max_seq_len, const std::string& label) {
  auto eagle = [&](const std::string& policy) {
    EngineConfig c = config(policy, b, model);
    PluginEntry e;
    e.name = "eagle3";
    e.settings_toml = fmt::format("checkpoint = {}\ntree = \"chain\"\ndepth = 4\n", nlohmann::json(head).dump());
    c.plugins = {e, specpv_entry(b.toml())};
    c.engine.max_seq_len = max_seq_len;
    c.kv_cache.num_pages = 2048;
    return test::with_speculation(c, "eagle3", 4);
  };
  // Under the sanitizers (CI's second stage: several times slower) a shorter run of the same code.
  const int64_t new_tokens = test::sanitized_build() ? 16 : 48;
  EngineMetrics full_metrics, m;
  const std::vector<Tokens> full = run(eagle("full"), prompts, new_tokens, &full_metrics);
  const std::vector<Tokens> partial = run(eagle("specpv"), prompts, new_tokens, &m);
  EXPECT_GT(m.verification.partial_views, 0) << label;
  const Agreement g = agreement(partial, full);
  std::cout << fmt::format(
      "[specpv] {}, budgets {}+{}+{} blocks of {}: {}/{} tokens ({:.1f}%) equal to full "
      "verification, first divergence at output token {}; acceptance {:.2f} (full verification: "
      "{:.2f}); {} partial / {} full views, {:.1f}% of the context read\n",
      label, b.sinks, b.retrieval, b.window, b.block_size, g.same, g.total, 100.0 * g.same / g.total,
      g.first_divergence, m.speculation.acceptance_length(), full_metrics.speculation.acceptance_length(),
      m.verification.partial_views, m.verification.full_views, 100.0 * m.verification.attended_fraction());
  for (const Tokens& out : partial) EXPECT_EQ(static_cast<int64_t>(out.size()), new_tokens) << label;
  return g;
}

Budgets eagle_budgets(int64_t retrieval) {
  Budgets b;
  b.block_size = 16;
  b.sinks = 1;
  b.retrieval = retrieval;
  b.window = 4;
  b.buffer = 20;
  b.threshold = 128;
  b.interval = 32;
  return b;
}

// Within the 512 positions stories260K was trained on: 8 prompts of ~450 tokens (28 blocks).
TEST(SpecPV, FidelityWithTheEagle3HeadWithinTheTrainedContext) {
  std::vector<Tokens> prompts;
  for (size_t i = 0; i < (test::sanitized_build() ? 2u : 8u); ++i)
    prompts.push_back(story(440 + static_cast<int64_t>(i), 211 * i));
  const std::string model = test::test_data_path("models/stories260K");
  const std::string head = test::test_data_path("models/stories260K-eagle3");
  for (int64_t retrieval : {4, 12}) {
    const Agreement g =
        eagle3_fidelity(model, head, prompts, eagle_budgets(retrieval), 512,
                        fmt::format("stories260K + EAGLE-3, {} prompts of ~450 tokens", prompts.size()));
    EXPECT_GT(g.same, 0);
  }
}

// Prompts of a few thousand tokens (the long prompts): stories260K was trained on 512
// positions, so a copy of its config allows 4,096 -- RoPE extends, the model's quality does not, and
// its EAGLE-3 head barely drafts there; this measures SpecPV's agreement, not the model's.
TEST(SpecPV, FidelityWithTheEagle3HeadOnLongPrompts) {
  const std::string model = with_positions(test::test_data_path("models/stories260K"), "target", 4096);
  const std::string head = with_positions(test::test_data_path("models/stories260K-eagle3"), "head", 4096);
  std::vector<Tokens> prompts = {story(2600), story(3000, 777), story(2800, 1555)};
  if (test::sanitized_build()) prompts.resize(1);
  Budgets b = eagle_budgets(24);
  b.sinks = 2;
  b.window = 8;
  b.threshold = 1024;
  const Agreement g = eagle3_fidelity(
      model, head, prompts, b, 4096,
      fmt::format("stories260K (extended to 4K) + EAGLE-3, {} prompts of 2,600-3,000 tokens", prompts.size()));
  EXPECT_GT(g.same, 0);
  std::filesystem::remove_all(model);
  std::filesystem::remove_all(head);
}

TEST(SpecPV, BadSettingsAreLoadErrorsNamingTheKey) {
  auto error = [](const std::string& settings) {
    EngineConfig c = config("specpv", Budgets{});
    c.plugins[1].settings_toml = settings;
    try {
      Engine::from_config(c);
    } catch (const DriftError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(error("block_size = 16"),
              HasSubstr("setting 'block_size' = 16 must equal the engine's KV page size (kv_cache.block_size = 4)"));
  EXPECT_THAT(error("block_size = 4\nsinks = 2"), HasSubstr("setting 'sinks' is unknown"));
  EXPECT_THAT(error("block_size = 4\nn_retrieval_blocks = -3"), HasSubstr("'n_retrieval_blocks' = -3"));
}

}  // namespace
}  // namespace drift
