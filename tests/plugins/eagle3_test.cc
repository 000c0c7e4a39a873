// The eagle3 draft provider through the engine on the CPU backend: stories260K with its real
// EAGLE-3 head (../shared/models/stories260K-eagle3, trained by ../shared/tools/eagle3).
//  - Against the reference speculative runs (golden_speculative.json, eagle3_ref.py's semantics):
//    the tokens committed per target forward, step for step, and tau.
//  - Lossless: every tree shape gives exactly the plain engine's tokens -- batched, with chunked
//    prefill, preemption, aborts, the prefix cache, and sampling (the same seeded draws).
//  - A dynamic tree beats the chain at equal verify budget.
//  - Its memory is planned: the KV pool makes room for the head's draft KV under memory_mb, and
//    what the plugin holds stays inside what it declared (ABI 1.4 declare_memory).
//  - Bad settings and checkpoints are load errors naming the key or tensor and the file.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine.h"
#include "core/error.h"
#include "core/model/model_layout.h"
#include "core/safetensors.h"
#include "support/golden.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

using Tokens = std::vector<int32_t>;
using ::testing::HasSubstr;

std::string head_dir() { return test::test_data_path("models/stories260K-eagle3"); }

nlohmann::json golden() {
  std::ifstream in(head_dir() + "/golden_speculative.json");
  return nlohmann::json::parse(in);
}

std::vector<Tokens> golden_prompts() { return golden().at("prompts").get<std::vector<Tokens>>(); }

PluginEntry eagle3_entry(const std::string& tree_settings, const std::string& checkpoint = "") {
  PluginEntry e;
  e.name = "eagle3";
  e.settings_toml = fmt::format("checkpoint = {}\n{}\n",
                                nlohmann::json(checkpoint.empty() ? head_dir() : checkpoint).dump(), tree_settings);
  return e;
}

EngineConfig base_config() {
  EngineConfig c;
  c.model.path = test::test_data_path("models/stories260K");
  c.engine.max_batch_size = 16;
  c.engine.max_num_tokens = 256;
  c.engine.check_kv_integrity = true;
  c.kv_cache.block_size = 16;
  c.kv_cache.num_pages = 512;
  return c;
}

EngineConfig eagle3_config(const std::string& tree_settings, int64_t budget) {
  EngineConfig c = base_config();
  c.plugins.push_back(eagle3_entry(tree_settings));
  return test::with_speculation(c, "eagle3", budget);
}

SamplingParams greedy(int64_t n) { return test::greedy_ignoring_eos(n); }

using test::outputs_of;

std::vector<Tokens> plain_outputs(const std::vector<Tokens>& prompts, const SamplingParams& params,
                                  EngineConfig config = base_config()) {
  return outputs_of(test::run_batch(*Engine::from_config(config), prompts, {params}));
}

// Tokens committed per decode step (the prompt's step left out), and their mean over all runs.
struct Steps {
  std::vector<std::vector<int32_t>> per_prompt;
  double tau = 0;
};

Steps decode_steps(const std::vector<test::RunResult>& runs, const std::vector<std::vector<int32_t>>& lengths_like) {
  Steps s;
  int64_t sum = 0, count = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& all = runs[i].stats.speculation.committed_per_step;
    const size_t n = std::min(lengths_like[i].size(), all.size() - 1);
    s.per_prompt.emplace_back(all.begin() + 1, all.begin() + 1 + static_cast<int64_t>(n));
    sum += std::accumulate(s.per_prompt.back().begin(), s.per_prompt.back().end(), int64_t{0});
    count += static_cast<int64_t>(n);
  }
  s.tau = static_cast<double>(sum) / static_cast<double>(count);
  return s;
}

class Eagle3Golden : public ::testing::TestWithParam<int> {};

// golden_speculative.json: eagle3_ref.py's speculative decoding (chain of k, greedy, 96 tokens)
// on 16 prompts -- the tokens committed by each target forward. The engine runs the same chain
// (max_new_tokens leaves room for a full chain at the reference's last step, so depth limits never
// cut a draft the reference verified) and must commit the same tokens step for step.
TEST_P(Eagle3Golden, CommittedTokensPerStepEqualTheReference) {
  const int k = GetParam();
  const nlohmann::json g = golden();
  const auto reference = g.at("runs").at(std::to_string(k)).at("steps").get<std::vector<std::vector<int32_t>>>();
  const std::vector<Tokens> prompts = golden_prompts();
  const int64_t new_tokens = g.at("new_tokens").get<int64_t>();
  auto engine = Engine::from_config(eagle3_config(fmt::format("tree = \"chain\"\ndepth = {}", k), k));
  const auto runs = test::run_batch(*engine, prompts, {greedy(new_tokens + k + 1)});
  const Steps steps = decode_steps(runs, reference);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(steps.per_prompt[i], reference[i]) << "prompt " << i;
  EXPECT_NEAR(steps.tau, g.at("runs").at(std::to_string(k)).at("tau").get<double>(), 0.005);
  // And the tokens are plain greedy decoding's.
  const std::vector<Tokens> plain = plain_outputs(prompts, greedy(new_tokens + k + 1));
  EXPECT_EQ(outputs_of(runs), plain);
  EXPECT_GT(engine->metrics().draft_timing.propose_calls, 0);
  EXPECT_GT(engine->metrics().draft_timing.seconds(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Chain, Eagle3Golden, ::testing::Values(2, 4),
                         [](const auto& info) { return fmt::format("k{}", info.param); });

// The head follows a forward's rows in windows of extension_rows: with 5, the 16 prompts' prefill
// (one forward) runs in windows that cut prompts and cross from one prompt to the next, and a
// window's rows attend to the draft KV the previous windows committed. Step for step the same
// tokens as the reference (which follows each prompt whole).
TEST(Eagle3, ExtensionWindowsCommitTheReferenceSteps) {
  const nlohmann::json g = golden();
  const auto reference = g.at("runs").at("4").at("steps").get<std::vector<std::vector<int32_t>>>();
  const std::vector<Tokens> prompts = golden_prompts();
  const int64_t new_tokens = g.at("new_tokens").get<int64_t>();
  EngineConfig config = eagle3_config("tree = \"chain\"\ndepth = 4\nextension_rows = 5", 4);
  config.engine.max_num_tokens = 1024;  // every prompt in the first forward
  auto engine = Engine::from_config(config);
  const auto runs = test::run_batch(*engine, prompts, {greedy(new_tokens + 5)});
  const Steps steps = decode_steps(runs, reference);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(steps.per_prompt[i], reference[i]) << "prompt " << i;
  EXPECT_EQ(outputs_of(runs), plain_outputs(prompts, greedy(new_tokens + 5)));
}

struct Shape {
  const char* name;
  const char* settings;
  int64_t budget;
};

void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.name; }

const Shape kShapes[] = {
    {"chain", "tree = \"chain\"\ndepth = 5", 5},
    {"static", "tree = \"static\"\nchoices = [[0], [1], [0, 0], [1, 0], [0, 1], [0, 0, 0], [0, 0, 0, 0]]", 7},
    {"dynamic", "tree = \"dynamic\"\ndepth = 5\ntopk = 3\nnum_nodes = 10", 10},
};

class Eagle3Lossless : public ::testing::TestWithParam<Shape> {};

// 16 prompts at once with short prefill chunks and KV integrity checked every step.
TEST_P(Eagle3Lossless, BatchedChunkedOutputsEqualPlainDecoding) {
  const Shape& shape = GetParam();
  const std::vector<Tokens> prompts = golden_prompts();
  EngineConfig config = eagle3_config(shape.settings, shape.budget);
  config.engine.max_num_tokens = 24;  // prompts of 8-40 tokens arrive in several chunks
  auto engine = Engine::from_config(config);
  const auto runs = test::run_batch(*engine, prompts, {greedy(64)});
  EXPECT_EQ(outputs_of(runs), plain_outputs(prompts, greedy(64)));
  const auto& spec = engine->metrics().speculation;
  EXPECT_GT(spec.accepted_tokens, 400) << "the head drafts well: most drafts are accepted";
  EXPECT_GT(spec.acceptance_length(), 2.5);
}

// A pool so small that max_utilization preempts (the head's state is rebuilt on resume), and two
// requests aborted mid-run: the rest still decode exactly; aborted outputs are prefixes.
TEST_P(Eagle3Lossless, PreemptionAndAbortsKeepOutputsExact) {
  const Shape& shape = GetParam();
  const std::vector<Tokens> prompts = golden_prompts();
  EngineConfig config = eagle3_config(shape.settings, shape.budget);
  config.scheduler.policy = "max_utilization";
  config.kv_cache.num_pages = 24;
  config.kv_cache.block_size = 8;
  const std::vector<Tokens> plain = plain_outputs(prompts, greedy(48));
  auto engine = Engine::from_config(config);
  std::vector<int64_t> ids;
  for (const Tokens& p : prompts) ids.push_back(engine->add_request(p, greedy(48)));
  for (int step = 0; engine->has_unfinished(); ++step) {
    if (step == 6) engine->abort(ids[3]);
    if (step == 20) engine->abort(ids[11]);
    engine->step();
  }
  EXPECT_GT(engine->metrics().preemptions, 0) << "the pool did not force preemption";
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Sequence& seq = engine->request(ids[i]);
    if (i == 3 || i == 11) {
      EXPECT_EQ(seq.finish_reason, FinishReason::Abort);
      EXPECT_TRUE(std::equal(seq.output.begin(), seq.output.end(), plain[i].begin())) << "request " << i;
    } else {
      EXPECT_EQ(seq.output, plain[i]) << "request " << i;
    }
  }
  EXPECT_GT(engine->metrics().speculation.accepted_tokens, 200);
}

// Temperature sampling: target-only tree sampling makes the same seeded draws plain decoding
// does, so each request's tokens equal the plain engine's with the same seed.
TEST_P(Eagle3Lossless, SampledOutputsEqualPlainSampledOutputs) {
  const Shape& shape = GetParam();
  const std::vector<Tokens> prompts = golden_prompts();
  SamplingParams params = greedy(48);
  params.temperature = 0.8;
  params.top_p = 0.95;
  std::vector<SamplingParams> per_request;
  for (size_t i = 0; i < prompts.size(); ++i) {
    per_request.push_back(params);
    per_request.back().seed = 1000 + i;
  }
  auto engine = Engine::from_config(eagle3_config(shape.settings, shape.budget));
  const auto runs = test::run_batch(*engine, prompts, per_request);
  EXPECT_EQ(outputs_of(runs), outputs_of(test::run_batch(*Engine::from_config(base_config()), prompts, per_request)));
  EXPECT_GT(engine->metrics().speculation.accepted_tokens, 100);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Eagle3Lossless, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return std::string(info.param.name); });

// Prefix caching: a request adopting cached pages starts its draft KV after them (the target never
// ran those positions), and still drafts -- and decodes exactly.
TEST(Eagle3, PrefixCacheOnStaysExactAndStillDrafts) {
  std::vector<Tokens> prompts = golden_prompts();
  const Tokens shared(prompts[4].begin(), prompts[4].end());  // 40 tokens: two full pages of 16
  std::vector<Tokens> with_prefix;
  for (size_t i = 0; i < 6; ++i) {
    Tokens p = shared;
    p.insert(p.end(), prompts[i].begin() + 1, prompts[i].end());
    with_prefix.push_back(p);
  }
  EngineConfig config = eagle3_config("tree = \"chain\"\ndepth = 4", 4);
  config.plugins.push_back(test::prefix_cache_entry());
  auto engine = Engine::from_config(config);
  const auto first = test::run_batch(*engine, {with_prefix[0]}, {greedy(32)});
  std::vector<Tokens> rest(with_prefix.begin() + 1, with_prefix.end());
  const auto later = test::run_batch(*engine, rest, {greedy(32)});
  EXPECT_GE(engine->metrics().prefix_cache.hit_tokens, 5 * 32);
  std::vector<Tokens> outputs = outputs_of(first);
  for (const Tokens& o : outputs_of(later)) outputs.push_back(o);
  EXPECT_EQ(outputs, plain_outputs(with_prefix, greedy(32)));
  for (const auto& r : later) EXPECT_GT(r.stats.speculation.accepted_tokens, 5) << "a cached request still drafts";
}

// The head declares its memory before the pool is sized: its K and V per token of the engine's pool
// (2 x kv heads x head_dim floats) come out of kv_cache.memory_mb with the target's pages, and
// what it then holds -- weights, the workspace at its planned size, the draft KV pool -- stays
// inside its declaration through a batched run with every tree shape, outputs exact.
TEST(Eagle3, HoldsWhatItDeclaresAndTheKvPoolMakesRoomForIt) {
  const std::vector<Tokens> prompts = golden_prompts();
  // A dynamic tree expanding more nodes a level than the verify budget, and a static tree of sparse
  // child ranks (its top-k as wide as its largest rank), as well as the chain.
  for (const auto& [settings, budget] : {std::pair<const char*, int64_t>{"tree = \"chain\"\ndepth = 4", 8},
                                         {"tree = \"dynamic\"\ndepth = 3\ntopk = 8", 4},
                                         {"tree = \"static\"\nchoices = [[0], [7], [0, 0], [0, 1], [7, 0]]", 5}}) {
    EngineConfig plain = base_config();
    plain.kv_cache.num_pages = 0;
    plain.kv_cache.memory_mb = 4;
    EngineConfig config = eagle3_config(settings, budget);
    config.kv_cache = plain.kv_cache;
    auto engine = Engine::from_config(config);
    const int64_t plain_pages = Engine::from_config(plain)->kv().num_pages();
    const nlohmann::json head = nlohmann::json::parse(std::ifstream(head_dir() + "/config.json"));
    const int64_t head_dim =
        head.value("head_dim", head.at("hidden_size").get<int64_t>() / head.at("num_attention_heads").get<int64_t>());
    const int64_t per_token = 2 * head.at("num_key_value_heads").get<int64_t>() * head_dim * 4;
    const auto page_bytes = static_cast<int64_t>(
        ModelLayout{load_model_config(config.model.path)}.kv_layout(16, DType::F32).bytes_per_page());
    EXPECT_LT(engine->kv().num_pages(), plain_pages);
    EXPECT_EQ(engine->kv().num_pages(), 4 * 1048576 / (page_bytes + 16 * per_token)) << settings;
    const auto runs = test::run_batch(*engine, prompts, {greedy(64)});
    EXPECT_EQ(test::outputs_of(runs), plain_outputs(prompts, greedy(64)));
    // Every request drafted to the end: none fell back for want of memory or a workspace buffer.
    for (const auto& r : runs) EXPECT_GT(r.stats.speculation.accepted_tokens, 10) << settings;
    for (const PluginInfo& info : engine->plugin_infos()) {
      if (info.name != "eagle3") continue;
      EXPECT_GT(info.memory_limit, per_token * engine->kv().num_pages() * 16) << settings;
      EXPECT_LE(info.memory_peak, info.memory_limit) << settings;
      EXPECT_GT(info.memory_peak, info.memory_limit * 9 / 10) << "the plan is not much more than it holds";
    }
  }
}

// At the same number of verified nodes per step, EAGLE-2's dynamic tree (expand the most likely
// paths) accepts more than one chain does.
TEST(Eagle3, DynamicTreeBeatsTheChainAtEqualVerifyBudget) {
  const std::vector<Tokens> prompts = golden_prompts();
  auto tau = [&](const std::string& settings) {
    auto engine = Engine::from_config(eagle3_config(settings, 8));
    test::run_batch(*engine, prompts, {greedy(96)});
    return engine->metrics().speculation.acceptance_length();
  };
  const double chain = tau("tree = \"chain\"\ndepth = 8");
  const double dynamic = tau("tree = \"dynamic\"\ndepth = 6\ntopk = 2\nnum_nodes = 8");
  EXPECT_GT(dynamic, chain + 0.1) << "chain " << chain << ", dynamic " << dynamic;
}

// A request that turns speculation off is not followed by the head at all (no draft KV).
TEST(Eagle3, RequestsWithSpeculationOffGetNoDrafts) {
  const std::vector<Tokens> prompts = golden_prompts();
  auto engine = Engine::from_config(eagle3_config("tree = \"chain\"\ndepth = 4", 4));
  SamplingParams off = greedy(32);
  off.speculative = "off";
  const auto runs = test::run_batch(*engine, {prompts[0], prompts[1]}, {greedy(32), off});
  EXPECT_GT(runs[0].stats.speculation.accepted_tokens, 0);
  EXPECT_EQ(runs[1].stats.speculation.draft_tokens, 0);
  EXPECT_EQ(outputs_of(runs), plain_outputs({prompts[0], prompts[1]}, greedy(32)));
}

// ---- load errors -----------------------------------------------------------------------------

std::string load_error(const EngineConfig& config) {
  try {
    Engine::from_config(config);
  } catch (const DriftError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string load_error_for(const std::string& settings, const std::string& checkpoint = "") {
  EngineConfig c = base_config();
  c.plugins.push_back(eagle3_entry(settings, checkpoint));
  return load_error(test::with_speculation(c, "eagle3", 4));
}

// A copy of the head with its config.json edited by `edit`, or a tensor dropped.
std::string edited_head(const std::function<void(nlohmann::json&)>& edit, const std::string& drop_tensor = "") {
  const std::string dir = test::make_temp_dir("eagle3-head");
  nlohmann::json config = nlohmann::json::parse(std::ifstream(head_dir() + "/config.json"));
  edit(config);
  std::ofstream(dir + "/config.json") << config.dump(1);
  SafetensorsCheckpoint head(head_dir() + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const std::string& name : head.names()) {
    if (name == drop_tensor) continue;
    const TensorInfo& info = head.get(name);
    tensors.emplace_back(name, is_integer_dtype(info.dtype) ? to_i32(info) : to_f32(info));
  }
  write_safetensors(dir + "/model.safetensors", tensors, {});
  return dir;
}

TEST(Eagle3, BadSettingsAreLoadErrorsNamingTheKey) {
  EXPECT_THAT(load_error_for("tree = \"bush\""),
              HasSubstr("setting 'tree' = 'bush' must be \"chain\", \"static\" or \"dynamic\""));
  EXPECT_THAT(load_error_for("depth = 0"), HasSubstr("setting 'depth' = 0 must be an integer in 1..4096"));
  EXPECT_THAT(load_error_for("topk = \"3\""), HasSubstr("setting 'topk'"));
  EXPECT_THAT(load_error_for("dept = 3"), HasSubstr("setting 'dept' is unknown"));
  EXPECT_THAT(load_error_for("extension_rows = 0"), HasSubstr("setting 'extension_rows' = 0 must be an integer"));
  EXPECT_THAT(load_error_for("tree = \"static\""), HasSubstr("setting 'choices'"));
  EXPECT_THAT(load_error_for("tree = \"static\"\nchoices = [[0], [1, 0, 0]]"), HasSubstr("parent path is missing"));
  EXPECT_THAT(load_error_for("", "/nonexistent/head"), HasSubstr("/nonexistent/head/config.json"));
  EngineConfig no_checkpoint = base_config();
  PluginEntry e;
  e.name = "eagle3";
  no_checkpoint.plugins.push_back(e);
  EXPECT_THAT(load_error(test::with_speculation(no_checkpoint, "eagle3", 4)), HasSubstr("setting 'checkpoint'"));
}

TEST(Eagle3, HeadsItCannotRunAreLoadErrorsNamingKeyAndFile) {
  const auto error_with = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& drop = "") {
    const std::string dir = edited_head(edit, drop);
    return std::pair(load_error_for("", dir), dir);
  };
  auto [layers, d1] = error_with([](nlohmann::json& c) { c["num_hidden_layers"] = 2; });
  EXPECT_THAT(layers, HasSubstr(d1 + "/config.json: 'num_hidden_layers' = 2"));
  auto [width, d2] = error_with([](nlohmann::json& c) { c["target_hidden_size"] = 128; });
  EXPECT_THAT(width,
              HasSubstr(d2 + "/config.json: 'target_hidden_size' = 128 differs from the target's hidden_size 64"));
  auto [aux, d3] = error_with([](nlohmann::json& c) {
    c["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = {1, 2, 9};
  });
  EXPECT_THAT(aux, HasSubstr("'eagle_config.eagle_aux_hidden_state_layer_ids' = [1,2,9]"));
  auto [act, d4] = error_with([](nlohmann::json& c) { c["hidden_act"] = "gelu"; });
  EXPECT_THAT(act, HasSubstr("'hidden_act' = \"gelu\" is not supported"));
  auto [missing, d5] = error_with([](nlohmann::json&) {}, "midlayer.self_attn.k_proj.weight");
  EXPECT_THAT(
      missing,
      HasSubstr(d5 +
                "/model.safetensors: tensor 'midlayer.self_attn.k_proj.weight' is missing (expected shape [32, 128])"));
  auto [shape, d6] = error_with([](nlohmann::json& c) { c["intermediate_size"] = 100; });
  EXPECT_THAT(shape, HasSubstr("tensor 'midlayer.mlp.down_proj.weight' has shape [64, 172], expected [64, 100]"));
}

// A random-weight head of another shape, written here: hidden 32 over the target's 64 (so with its
// own 32-wide embedding), aux layers 0 (the embeddings), 2 and 4, and no lm_head (it drafts with the
// target's... which is 64 wide, so that combination is refused; with its own lm_head it runs).
// What follows from the target: the layers it captures, its heads' width and rotary base.
struct TargetFit {
  std::vector<int> aux_layers = {0, 2, 4};
  int64_t head_dim = 8;
  double rope_theta = 10000.0;
};

std::string random_head(bool with_lm_head, bool with_embedding, int64_t hidden, const TargetFit& fit = {}) {
  const std::vector<int>& aux_layers = fit.aux_layers;
  const int64_t head_dim = fit.head_dim;
  const std::string dir = test::make_temp_dir("eagle3-random");
  const int64_t target_hidden = 64, vocab = 512, heads = 4, kv_heads = 2, inter = 48;
  nlohmann::json config = {{"hidden_size", hidden},
                           {"intermediate_size", inter},
                           {"num_attention_heads", heads},
                           {"num_key_value_heads", kv_heads},
                           {"head_dim", head_dim},
                           {"num_hidden_layers", 1},
                           {"rms_norm_eps", 1e-5},
                           {"rope_theta", fit.rope_theta},
                           {"vocab_size", vocab},
                           {"target_hidden_size", target_hidden},
                           {"eagle_aux_hidden_state_layer_ids", aux_layers}};
  std::ofstream(dir + "/config.json") << config.dump(1);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 0.3f);
  auto random = [&](std::vector<int64_t> shape) {
    Tensor t = Tensor::zeros(shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = dist(rng);
    return t;
  };
  auto ones = [&](int64_t n) {
    Tensor t = Tensor::zeros({n});
    std::fill(t.as<float>(), t.as<float>() + n, 1.0f);
    return t;
  };
  std::vector<std::pair<std::string, Tensor>> t;
  t.emplace_back("fc.weight", random({hidden, 3 * target_hidden}));
  t.emplace_back("midlayer.input_layernorm.weight", ones(hidden));
  t.emplace_back("midlayer.hidden_norm.weight", ones(hidden));
  t.emplace_back("midlayer.self_attn.q_proj.weight", random({heads * head_dim, 2 * hidden}));
  t.emplace_back("midlayer.self_attn.k_proj.weight", random({kv_heads * head_dim, 2 * hidden}));
  t.emplace_back("midlayer.self_attn.v_proj.weight", random({kv_heads * head_dim, 2 * hidden}));
  t.emplace_back("midlayer.self_attn.o_proj.weight", random({hidden, heads * head_dim}));
  t.emplace_back("midlayer.post_attention_layernorm.weight", ones(hidden));
  t.emplace_back("midlayer.mlp.gate_proj.weight", random({inter, hidden}));
  t.emplace_back("midlayer.mlp.up_proj.weight", random({inter, hidden}));
  t.emplace_back("midlayer.mlp.down_proj.weight", random({hidden, inter}));
  t.emplace_back("norm.weight", ones(hidden));
  if (with_lm_head) t.emplace_back("lm_head.weight", random({vocab, hidden}));
  if (with_embedding) t.emplace_back("embed_tokens.weight", random({vocab, hidden}));
  write_safetensors(dir + "/model.safetensors", t, {});
  return dir;
}

TEST(Eagle3, HeadsOfOtherShapesRunLosslessly) {
  const std::vector<Tokens> all = golden_prompts();
  const std::vector<Tokens> prompts(all.begin(), all.begin() + 4);
  const std::vector<Tokens> plain = plain_outputs(prompts, greedy(24));
  struct Variant {
    const char* what;
    std::string dir;
  };
  for (const Variant& v :
       {Variant{"hidden 32 with its own embedding and head, aux layer 0", random_head(true, true, 32)},
        Variant{"no lm_head: the target's (and its embedding)", random_head(false, false, 64)}}) {
    EngineConfig c = base_config();
    c.plugins.push_back(eagle3_entry("tree = \"dynamic\"\ndepth = 3\ntopk = 2", v.dir));
    auto engine = Engine::from_config(test::with_speculation(c, "eagle3", 6));
    EXPECT_EQ(outputs_of(test::run_batch(*engine, prompts, {greedy(24)})), plain) << v.what;
    EXPECT_GT(engine->metrics().speculation.draft_tokens, 0) << v.what;
  }
  // Without an embedding of its width the head cannot run: an error naming what is missing.
  EXPECT_THAT(
      load_error_for("", random_head(true, false, 32)),
      HasSubstr("has no 'embed_tokens.weight', and the target's embedding is 64 wide, not the head's hidden_size 32"));
  EXPECT_THAT(load_error_for("", random_head(false, true, 32)),
              HasSubstr("has no 'lm_head.weight', and the target's is 64 wide, not the head's hidden_size 32"));
}

// A head shaped like the published gpt-oss EAGLE-3 heads -- no lm_head and no embedding: it drafts
// over the target's vocabulary with the target's -- on a GPT-OSS target (golden/gptoss-tiny: the
// same width and vocabulary as stories260K, four layers; sinks, sliding windows and experts): its
// trees verify under the windows, and the output is the plain output, batched and with the
// prompts arriving in chunks.
TEST(Eagle3, AGptOssStyleHeadOnAGptOssTargetRunsLosslessly) {
  EngineConfig c = base_config();
  c.model.path = test::test_data_path("golden/gptoss-tiny");
  c.kv_cache.block_size = 4;
  std::vector<Tokens> prompts;
  for (const auto& g : test::load_golden_cases(c.model.path)) prompts.push_back(g.prompt);
  prompts.push_back(golden_prompts()[0]);  // stories260K's vocabulary is the same 512 ids
  const std::vector<Tokens> plain = plain_outputs(prompts, greedy(32), c);
  c.plugins.push_back(eagle3_entry("tree = \"dynamic\"\ndepth = 4\ntopk = 2",
                                   random_head(false, false, 64, TargetFit{{1, 2, 3}, 16, 150000.0})));
  for (int64_t budget : {256, 12}) {
    EngineConfig run = test::with_speculation(c, "eagle3", 6);
    run.engine.max_num_tokens = budget;
    auto engine = Engine::from_config(run);
    EXPECT_EQ(outputs_of(test::run_batch(*engine, prompts, {greedy(32)})), plain) << "token budget " << budget;
    EXPECT_GT(engine->metrics().speculation.draft_tokens, 0) << "token budget " << budget;
  }
}

// Aux layers at the top level (not under eagle_config) are read too; and the target's layer ids
// decide which layers the engine captures.
TEST(Eagle3, TopLevelAuxLayerIdsAreHonoured) {
  const std::string dir = edited_head([](nlohmann::json& c) {
    c["eagle_aux_hidden_state_layer_ids"] = c["eagle_config"]["eagle_aux_hidden_state_layer_ids"];
    c.erase("eagle_config");
  });
  EngineConfig c = base_config();
  c.plugins.push_back(eagle3_entry("tree = \"chain\"\ndepth = 4", dir));
  auto engine = Engine::from_config(test::with_speculation(c, "eagle3", 4));
  const auto runs = test::run_batch(*engine, {golden_prompts()[0]}, {greedy(32)});
  EXPECT_GT(runs[0].stats.speculation.acceptance_length(), 2.5) << "the same layers, so the same good drafts";
}

}  // namespace
}  // namespace drift
