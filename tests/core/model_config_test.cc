#include "core/model/model_config.h"

#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/model/model_layout.h"
#include "core/model/rope_frequencies.h"
#include "core/safetensors.h"
#include "support/test_data.h"

namespace drift {
namespace {

using json = nlohmann::json;

void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected a DriftError";
  } catch (const DriftError& e) {
    std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// The fields every config states, compared with the raw JSON rather than hand-copied numbers.
void expect_matches_json(const ModelConfig& c, const json& j) {
  EXPECT_EQ(c.model_type, j["model_type"].get<std::string>());
  EXPECT_EQ(c.vocab_size, j["vocab_size"].get<int64_t>());
  EXPECT_EQ(c.hidden_size, j["hidden_size"].get<int64_t>());
  EXPECT_EQ(c.intermediate_size, j["intermediate_size"].get<int64_t>());
  EXPECT_EQ(c.num_layers, j["num_hidden_layers"].get<int64_t>());
  EXPECT_EQ(c.num_heads, j["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(c.num_kv_heads, j["num_key_value_heads"].get<int64_t>());
  EXPECT_EQ(c.max_position_embeddings, j["max_position_embeddings"].get<int64_t>());
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, j["rms_norm_eps"].get<double>());
  EXPECT_EQ(c.tie_word_embeddings, j["tie_word_embeddings"].get<bool>());
  EXPECT_DOUBLE_EQ(c.rope.theta, j["rope_parameters"]["rope_theta"].get<double>());
  EXPECT_EQ(c.rope.type == RopeType::Default, j["rope_parameters"].value("rope_type", "default") == "default");
}

ModelConfig load_golden(const std::string& relative) {
  std::string dir = drift::test::test_data_path(relative);
  if (dir.empty()) return {};
  ModelConfig c = load_model_config(dir);
  expect_matches_json(c, read_json(dir + "/config.json"));
  return c;
}

TEST(ModelConfigGolden, LlamaTiny) {
  ModelConfig c = load_golden("golden/llama-tiny");
  EXPECT_EQ(c.arch, Architecture::Llama);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2}));
}

TEST(ModelConfigGolden, Qwen2TinyHasBiasWithoutSayingSo) {
  ModelConfig c = load_golden("golden/qwen2-tiny");
  EXPECT_EQ(c.arch, Architecture::Qwen2);
  EXPECT_TRUE(c.attention_bias);  // config.json has no attention_bias key
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 96 / 6);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_FALSE(c.bos_token_id.has_value());  // null
  EXPECT_TRUE(c.eos_token_ids.empty());
}

TEST(ModelConfigGolden, Qwen3TinyExplicitHeadDimAndQkNorm) {
  ModelConfig c = load_golden("golden/qwen3-tiny");
  EXPECT_EQ(c.arch, Architecture::Qwen3);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_heads, 4);
  EXPECT_EQ(c.head_dim, 32);  // != 64 / 4
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.attention_bias);
}

TEST(ModelConfigGolden, Stories260K) {
  ModelConfig c = load_golden("models/stories260K");
  EXPECT_EQ(c.arch, Architecture::Llama);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_TRUE(c.tie_word_embeddings);
}

// GPT-OSS: its layers as data (alternating windowed and full attention, sinks, experts), the
// experts' sizes and YaRN rope, read from the miniature's config.json.
TEST(ModelConfigGolden, GptOss) {
  ModelConfig c = load_golden("golden/gptoss-tiny");
  EXPECT_EQ(c.arch, Architecture::GptOss);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_TRUE(c.attention_bias);
  ASSERT_EQ(c.layers.size(), 4u);
  for (size_t i = 0; i < c.layers.size(); ++i) {
    EXPECT_EQ(c.layers[i].attention_window, i % 2 == 0 ? 16 : 0) << "layer " << i;
    EXPECT_TRUE(c.layers[i].sinks);
    EXPECT_TRUE(c.layers[i].moe);
  }
  EXPECT_EQ(c.moe.num_experts, 4);
  EXPECT_EQ(c.moe.experts_per_token, 2);
  EXPECT_DOUBLE_EQ(c.moe.swiglu_limit, 7.0);
  EXPECT_EQ(c.rope.type, RopeType::Yarn);
  EXPECT_DOUBLE_EQ(c.rope.factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position, 256);
  EXPECT_FALSE(c.rope.truncate);
  EXPECT_FALSE(c.moe.mxfp4);
  // The same model with its experts stored as MXFP4, as the published checkpoints.
  const ModelConfig q = load_golden("golden/gptoss-tiny-mxfp4");
  EXPECT_TRUE(q.moe.mxfp4);
  EXPECT_EQ(ModelLayout{q}.parameter_count(), ModelLayout{c}.parameter_count());
}

TEST(ModelConfig, GptOssLayerTypesAndExpertsAreChecked) {
  const std::string base = R"({"model_type": "gpt_oss", "vocab_size": 8, "hidden_size": 8, "intermediate_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "num_local_experts": 2, "sliding_window": 4, )";
  expect_error(
      [&] { parse_model_config(base + R"("num_experts_per_tok": 1, "layer_types": ["full_attention"]})", "g.json"); },
      {"layer_types", "num_hidden_layers = 2", "g.json"});
  expect_error(
      [&] {
        parse_model_config(
            base + R"("num_experts_per_tok": 1, "layer_types": ["full_attention", "chunked_attention"]})", "g.json");
      },
      {"layer_types[1]", "chunked_attention"});
  expect_error(
      [&] {
        parse_model_config(base + R"("num_experts_per_tok": 3, "layer_types": ["full_attention", "full_attention"]})",
                           "g.json");
      },
      {"num_experts_per_tok", "[1, 2]"});
}

constexpr const char* kLlama3Legacy = R"({
  "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
  "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "tie_word_embeddings": false})";

constexpr const char* kLlama3RopeParameters = R"({
  "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096, "intermediate_size": 14336,
  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
  "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
  "rope_parameters": {"rope_theta": 500000.0, "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})";

void expect_same_rope(const RopeConfig& a, const RopeConfig& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.theta, b.theta);
  EXPECT_EQ(a.factor, b.factor);
  EXPECT_EQ(a.low_freq_factor, b.low_freq_factor);
  EXPECT_EQ(a.high_freq_factor, b.high_freq_factor);
  EXPECT_EQ(a.original_max_position, b.original_max_position);
}

TEST(ModelConfigRope, LegacyAndRopeParametersConventionsAgree) {
  ModelConfig legacy = parse_model_config(kLlama3Legacy, "legacy.json");
  ModelConfig modern = parse_model_config(kLlama3RopeParameters, "modern.json");
  expect_same_rope(legacy.rope, modern.rope);
  // And therefore the same rotary frequencies, bit for bit.
  const RopeFrequencies legacy_freq = compute_rope_frequencies(legacy.rope, legacy.head_dim);
  EXPECT_EQ(legacy_freq.inv_freq, compute_rope_frequencies(modern.rope, modern.head_dim).inv_freq);
  EXPECT_NE(legacy_freq.inv_freq, compute_rope_frequencies(RopeConfig{.theta = 500000.0}, legacy.head_dim).inv_freq)
      << "llama3 scaling changed nothing";
  EXPECT_EQ(legacy.rope.type, RopeType::Llama3);
  EXPECT_EQ(legacy.rope.theta, 500000.0);
  EXPECT_EQ(legacy.rope.factor, 8.0);
  EXPECT_EQ(legacy.rope.original_max_position, 8192);
  EXPECT_EQ(legacy.head_dim, 128);
  EXPECT_EQ(legacy.bos_token_id, 128000);
  EXPECT_EQ(legacy.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
}

std::string with(const std::string& extra) {
  return R"({"model_type": "mistral", "vocab_size": 32, "hidden_size": 16, "intermediate_size": 24,
             "num_hidden_layers": 1, "num_attention_heads": 4)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

TEST(ModelConfigRope, LegacyNullScalingTypeKeyAndLinear) {
  ModelConfig c = parse_model_config(with(R"("rope_theta": 1e6, "rope_scaling": null)"), "s");
  EXPECT_EQ(c.rope.type, RopeType::Default);
  EXPECT_EQ(c.rope.theta, 1e6);
  c = parse_model_config(with(R"("rope_scaling": {"type": "linear", "factor": 2.0})"), "s");
  EXPECT_EQ(c.rope.type, RopeType::Linear);
  EXPECT_EQ(c.rope.factor, 2.0);
  EXPECT_EQ(c.rope.theta, 10000.0);  // transformers' default
}

TEST(ModelConfigDefaults, OptionalFieldsFallBack) {
  ModelConfig c = parse_model_config(with(R"("head_dim": null, "eos_token_id": 7)"), "s");
  EXPECT_EQ(c.arch, Architecture::Mistral);
  EXPECT_EQ(c.num_kv_heads, 4);   // = num_attention_heads
  EXPECT_EQ(c.head_dim, 4);       // 16 / 4
  EXPECT_EQ(c.max_position_embeddings, 4096 * 32);  // MistralConfig default
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{7}));
  EXPECT_STREQ(architecture_name(c.arch), "mistral");
}

TEST(ModelConfigErrors, MissingRequiredFieldNamesFieldAndSource) {
  expect_error([] { parse_model_config(R"({"model_type": "llama", "hidden_size": 8})", "cfg.json"); },
               {"vocab_size", "cfg.json"});
  expect_error([] { parse_model_config(R"({"vocab_size": 8})", "cfg.json"); }, {"model_type", "cfg.json"});
}

TEST(ModelConfigErrors, WrongTypeNamesFieldExpectedTypeAndValue) {
  std::string text = with("").replace(with("").find("\"hidden_size\": 16"), 17, R"("hidden_size": "16")");
  expect_error([&] { parse_model_config(text, "cfg.json"); }, {"hidden_size", "cfg.json", "integer", "\"16\""});
  expect_error([] { parse_model_config(with(R"("tie_word_embeddings": "yes")"), "cfg.json"); },
               {"tie_word_embeddings", "boolean", "\"yes\""});
  expect_error([] { parse_model_config(with(R"("eos_token_id": "x")"), "cfg.json"); }, {"eos_token_id", "\"x\""});
}

TEST(ModelConfigErrors, UnknownModelTypeNamesValueAndSource) {
  std::string text = with("");
  text.replace(text.find("mistral"), 7, "mamba");
  expect_error([&] { parse_model_config(text, "mamba.json"); }, {"'mamba'", "mamba.json"});
}

TEST(ModelConfigErrors, UnsupportedRopeTypeNamesType) {
  expect_error(
      [] { parse_model_config(with(R"("rope_parameters": {"rope_type": "longrope", "factor": 4.0})"), "y.json"); },
      {"'longrope'", "y.json"});
  // yarn is supported; without the context it was trained for it cannot place its ramp.
  expect_error([] { parse_model_config(with(R"("rope_parameters": {"rope_type": "yarn", "factor": 4.0})"), "y.json"); },
               {"rope_parameters.original_max_position_embeddings", "y.json"});
  expect_error([] { parse_model_config(with(R"("rope_scaling": {"type": "dynamic", "factor": 2.0})"), "d.json"); },
               {"'dynamic'", "d.json"});
  expect_error([] { parse_model_config(with(R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})"), "l.json"); },
               {"rope_scaling.low_freq_factor", "l.json"});
}

TEST(ModelConfigErrors, InconsistentShapesAndMissingFile) {
  expect_error([] { parse_model_config(with(R"("num_key_value_heads": 3)"), "g.json"); },
               {"num_key_value_heads", "g.json"});
  expect_error([] { parse_model_config("{not json", "bad.json"); }, {"bad.json"});
  expect_error([] { load_model_config("/nonexistent/model-dir"); }, {"/nonexistent/model-dir", "does not exist"});
  std::string empty_dir = drift::test::make_temp_dir("drift-config");
  expect_error([&] { load_model_config(empty_dir); }, {empty_dir + "/config.json"});
  std::filesystem::remove_all(empty_dir);
}

// Hardening item 4: every field the model uses is checked for range and meaning, and what the
// engine does not implement is refused instead of computed differently.
TEST(ModelConfigErrors, ImpossibleValuesAreRefusedNamingFieldAndRange) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {R"("rms_norm_eps": -1)", {"rms_norm_eps", "-1", "out of range (0, 1]"}},
      {R"("rms_norm_eps": 0)", {"rms_norm_eps", "out of range (0, 1]"}},
      {R"("rms_norm_eps": 5)", {"rms_norm_eps", "out of range (0, 1]"}},
      {R"("rope_theta": 0)", {"rope_theta", "out of range"}},
      {R"("rope_theta": -10000)", {"rope_theta", "out of range"}},
      {R"("rope_scaling": {"type": "linear", "factor": 0})", {"rope_scaling.factor", "out of range"}},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192})",
       {"high_freq_factor", "must be greater than low_freq_factor"}},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 0})",
       {"original_max_position_embeddings", "must be positive"}},
      {R"("max_position_embeddings": 0)", {"max_position_embeddings", "must be positive"}},
      {R"("max_position_embeddings": 4294967296)", {"max_position_embeddings", "out of range [1, 2147483647]"}},
      {R"("num_key_value_heads": 0)", {"num_key_value_heads", "must be positive"}},
      {R"("head_dim": 5)", {"head_dim = 5", "must be even"}},
      {R"("head_dim": 4194304)", {"head_dim", "out of range [1, 1048576]"}},
      {R"("eos_token_id": 32)", {"eos_token_id 32", "outside the vocabulary [0, 32)"}},
      {R"("eos_token_id": [2, 99])", {"eos_token_id 99", "outside the vocabulary"}},
      {R"("bos_token_id": 40)", {"bos_token_id 40", "outside the vocabulary"}},
  };
  for (const auto& [extra, parts] : cases) {
    SCOPED_TRACE(extra);
    std::vector<std::string> expected = parts;
    expected.push_back("cfg.json");
    // extra = extra: clang < 16 cannot capture a structured binding (the sanitizer build uses clang).
    expect_error([&, extra = extra] { parse_model_config(with(extra), "cfg.json"); }, expected);
  }
  std::string huge = with("");
  huge.replace(huge.find("\"num_hidden_layers\": 1"), 22, R"("num_hidden_layers": 1000000)");
  expect_error([&] { parse_model_config(huge, "cfg.json"); }, {"num_hidden_layers", "out of range [1, 4096]"});
}

TEST(ModelConfigErrors, WhatTheEngineDoesNotImplementIsRefused) {
  expect_error([] { parse_model_config(with(R"("hidden_act": "gelu")"), "cfg.json"); },
               {"hidden_act = \"gelu\"", "cfg.json", "not supported", "silu"});
  expect_error([] { parse_model_config(with(R"("hidden_act": 3)"), "cfg.json"); }, {"hidden_act", "string"});
  expect_error([] { parse_model_config(with(R"("quantization_config": {"quant_method": "awq"})"), "cfg.json"); },
               {"quantization_config", "cfg.json"});
  expect_error([] { parse_model_config(with(R"("use_sliding_window": true, "sliding_window": 8)"), "cfg.json"); },
               {"use_sliding_window", "not supported"});
  expect_error([] { parse_model_config(with(R"("layer_types": ["full_attention", "sliding_attention"])"), "cfg.json"); },
               {"layer_types", "\"sliding_attention\"", "full_attention"});
  // SiLU under either name, and layers that are all full attention, are what the engine computes.
  EXPECT_NO_THROW(parse_model_config(with(R"("hidden_act": "swish", "layer_types": ["full_attention"])"), "cfg.json"));
}

// quantization_config: only gpt_oss's mxfp4 experts are read; anything else, or blocks that would
// not fit the sizes, is refused naming the numbers.
TEST(ModelConfig, OnlyGptOssMxfp4ExpertsAreAQuantizationTheEngineReads) {
  const std::string gpt_oss = R"({"model_type": "gpt_oss", "vocab_size": 8, "hidden_size": 64, "intermediate_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 2, "num_local_experts": 2, "num_experts_per_tok": 1,
      "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"], )";
  const ModelConfig ok = parse_model_config(gpt_oss + R"("quantization_config": {"quant_method": "mxfp4"}})", "g.json");
  EXPECT_TRUE(ok.moe.mxfp4);
  expect_error([&] { parse_model_config(gpt_oss + R"("quantization_config": {"quant_method": "fp8"}})", "g.json"); },
               {"quantization_config", "fp8", "g.json", "mxfp4"});
  expect_error([] { parse_model_config(with(R"("quantization_config": {"quant_method": "mxfp4"})"), "cfg.json"); },
               {"quantization_config", "mxfp4", "cfg.json", "gpt_oss"});
  std::string narrow = gpt_oss;
  narrow.replace(narrow.find(R"("intermediate_size": 64)"), 23, R"("intermediate_size": 48)");
  expect_error([&] { parse_model_config(narrow + R"("quantization_config": {"quant_method": "mxfp4"}})", "g.json"); },
               {"mxfp4", "blocks of 32", "hidden_size (64)", "intermediate_size (48)"});
}

TEST(ModelConfigDefaults, MistralSlidingWindowIsKept) {
  EXPECT_EQ(parse_model_config(with(R"("sliding_window": 4096)"), "s").sliding_window, 4096);
  EXPECT_EQ(parse_model_config(with(R"("sliding_window": null)"), "s").sliding_window, 0);
  expect_error([] { parse_model_config(with(R"("sliding_window": 0)"), "s"); }, {"sliding_window", "must be positive"});
}

// parameter_count() from config.json alone must equal what the checkpoint actually stores.
void expect_parameter_count_matches_checkpoint(const std::string& relative) {
  std::string dir = drift::test::test_data_path(relative);
  ASSERT_FALSE(dir.empty());
  ModelLayout layout{load_model_config(dir)};
  SafetensorsCheckpoint ckpt(dir);
  int64_t stored = 0;
  for (const std::string& name : ckpt.names()) {
    int64_t numel = 1;
    for (int64_t d : ckpt.get(name).shape) numel *= d;
    stored += numel;
  }
  EXPECT_EQ(layout.parameter_count(), stored) << relative;
  EXPECT_EQ(layout.weight_bytes(DType::F32), static_cast<size_t>(stored) * 4) << relative;
}

TEST(ModelLayout, ParameterCountMatchesGoldenCheckpoints) {
  expect_parameter_count_matches_checkpoint("golden/llama-tiny");
  expect_parameter_count_matches_checkpoint("golden/qwen2-tiny");
  expect_parameter_count_matches_checkpoint("golden/qwen3-tiny");
  expect_parameter_count_matches_checkpoint("golden/gptoss-tiny");
  expect_parameter_count_matches_checkpoint("models/stories260K");
}

TEST(ModelLayout, ParameterCountOfPublishedModels) {
  // Published totals: Llama-3-8B 8,030,261,248; Qwen2.5-0.5B 494,032,768.
  EXPECT_EQ(ModelLayout{parse_model_config(kLlama3Legacy, "llama3-8b")}.parameter_count(), 8'030'261'248);
  ModelConfig qwen = parse_model_config(R"({"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896,
      "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
      "tie_word_embeddings": true, "rope_theta": 1000000.0, "rope_scaling": null})", "qwen2.5-0.5b");
  EXPECT_EQ(ModelLayout{qwen}.parameter_count(), 494'032'768);
}

TEST(KVLayout, BytesByHand) {
  // llama-tiny: 2 layers, 2 kv heads, head_dim 16.
  ModelLayout tiny{load_model_config(drift::test::test_data_path("golden/llama-tiny"))};
  KVLayout kv = tiny.kv_layout(16, DType::F32);
  EXPECT_EQ(kv.bytes_per_token(), 2u * 2 * 2 * 16 * 4);  // 512
  EXPECT_EQ(kv.bytes_per_page(), 512u * 16);               // 8192
  EXPECT_EQ(kv.pages_for_budget(1 << 20), 128);
  EXPECT_EQ(kv.pages_for_budget(8191), 0);
  EXPECT_EQ(kv.pages_for_tokens(16), 1);
  EXPECT_EQ(kv.pages_for_tokens(17), 2);
  EXPECT_EQ(tiny.kv_layout(16, DType::BF16).bytes_per_token(), 256u);

  // Llama-3-8B in bf16: 2 * 32 layers * 8 kv heads * 128 * 2 bytes = 128 KiB per token.
  ModelLayout big{parse_model_config(kLlama3Legacy, "llama3-8b")};
  KVLayout kv8b = big.kv_layout(64, DType::BF16);
  EXPECT_EQ(kv8b.bytes_per_token(), 131072u);
  EXPECT_EQ(kv8b.bytes_per_page(), 131072u * 64);  // 8 MiB

  expect_error([&] { tiny.kv_layout(0, DType::F32); }, {"block_size"});
}

}  // namespace
}  // namespace drift
