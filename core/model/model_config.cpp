#include "core/model/model_config.h"

#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_input.h"
#include "core/text_file.h"

namespace drift {

namespace {

using json = nlohmann::json;

// Reads fields of one JSON object, naming `where` (e.g. "config.json" or "rope_scaling in
// config.json") in every error.
class Fields {
 public:
  Fields(const json& obj, std::string prefix, const std::string& source)
      : obj_(obj), prefix_(std::move(prefix)), source_(source) {}

  // Absent and null both mean "not given": HF writes null for unset optional fields.
  bool has(const char* key) const { return obj_.contains(key) && !obj_[key].is_null(); }

  int64_t required_int(const char* key) const {
    if (!has(key)) fail("missing required field '{}{}' in '{}'", prefix_, key, source_);
    return int_at(key);
  }
  int64_t positive_int(const char* key) const {
    int64_t v = required_int(key);
    if (v <= 0) fail("field '{}{}' in '{}' must be positive, got {}", prefix_, key, source_, v);
    return v;
  }
  int64_t optional_int(const char* key, int64_t fallback) const { return has(key) ? int_at(key) : fallback; }
  // A size the engine multiplies with others: positive and at most `max`, so products stay in range.
  int64_t bounded_int(const char* key, int64_t max) const {
    const int64_t v = positive_int(key);
    if (v > max) fail("field '{}{}' in '{}' = {} is out of range [1, {}]", prefix_, key, source_, v, max);
    return v;
  }
  // A finite number in (0, max] (epsilons, rope bases and factors: zero, negative or non-finite
  // values turn every logit into NaN).
  double positive_double(const char* key, double fallback, double max) const {
    const double v = has(key) ? double_at(key) : fallback;
    if (!(v > 0 && v <= max)) fail("field '{}{}' in '{}' = {} is out of range (0, {}]", prefix_, key, source_, v, max);
    return v;
  }
  double required_positive_double(const char* key, double max) const {
    if (!has(key)) fail("missing required field '{}{}' in '{}'", prefix_, key, source_);
    return positive_double(key, 0, max);
  }

  double required_double(const char* key) const {
    if (!has(key)) fail("missing required field '{}{}' in '{}'", prefix_, key, source_);
    return double_at(key);
  }
  double optional_double(const char* key, double fallback) const { return has(key) ? double_at(key) : fallback; }

  bool optional_bool(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const json& v = obj_[key];
    if (!v.is_boolean()) wrong_type(key, "a boolean", v);
    return v.get<bool>();
  }

  std::string optional_string(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const json& v = obj_[key];
    if (!v.is_string()) wrong_type(key, "a string", v);
    return v.get<std::string>();
  }

  // A token id: an int32, with null/absent meaning none.
  std::optional<int32_t> optional_token(const char* key) const {
    if (!has(key)) return std::nullopt;
    return token(key, obj_[key]);
  }
  // eos_token_id: an int, a list of ints, or null.
  std::vector<int32_t> token_list(const char* key) const {
    if (!has(key)) return {};
    const json& v = obj_[key];
    if (!v.is_array()) return {token(key, v)};
    std::vector<int32_t> out;
    for (const json& e : v) out.push_back(token(key, e));
    return out;
  }

 private:
  [[noreturn]] void wrong_type(const char* key, const char* expected, const json& v) const {
    fail("field '{}{}' in '{}' must be {}, got {}", prefix_, key, source_, expected, v.dump());
  }
  int64_t int_at(const char* key) const {
    const json& v = obj_[key];
    if (!v.is_number_integer()) wrong_type(key, "an integer", v);
    return v.get<int64_t>();
  }
  double double_at(const char* key) const {
    const json& v = obj_[key];
    if (!v.is_number()) wrong_type(key, "a number", v);
    return v.get<double>();
  }
  int32_t token(const char* key, const json& v) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > std::numeric_limits<int32_t>::max())
      wrong_type(key, "a token id (non-negative int32), a list of them or null", v);
    return static_cast<int32_t>(v.get<int64_t>());
  }

  const json& obj_;
  std::string prefix_;
  const std::string& source_;
};

Architecture parse_architecture(const Fields& f, const std::string& source) {
  if (!f.has("model_type")) fail("missing required field 'model_type' in '{}'", source);
  std::string type = f.optional_string("model_type", "");
  if (type == "llama") return Architecture::Llama;
  if (type == "mistral") return Architecture::Mistral;
  if (type == "qwen2") return Architecture::Qwen2;
  if (type == "qwen3") return Architecture::Qwen3;
  if (type == "gpt_oss") return Architecture::GptOss;
  fail("unsupported model_type '{}' in '{}' (supported: llama, mistral, qwen2, qwen3, gpt_oss)", type, source);
}

// What transformers' config classes default max_position_embeddings to, so a config without
// the field means the same here as it does there.
int64_t default_max_positions(Architecture arch) {
  switch (arch) {
    case Architecture::Llama: return 2048;
    case Architecture::Mistral: return 4096 * 32;
    case Architecture::Qwen2:
    case Architecture::Qwen3: return 32768;
    case Architecture::GptOss:
      return 131072;
  }
  return 2048;
}

// Upper bounds on sizes: generous for any real model, small enough that products of them (weight
// and KV byte counts, positions) cannot overflow.
constexpr int64_t kMaxVocab = 2147483647;      // token ids are int32
constexpr int64_t kMaxPositions = 2147483647;  // positions are int32
constexpr int64_t kMaxWidth = 1 << 20;         // hidden, intermediate, head_dim
constexpr int64_t kMaxLayers = 1 << 12;
constexpr int64_t kMaxHeads = 1 << 12;

// What the engine computes and the keys that would ask for something else: a checkpoint that needs
// another activation, sliding-window attention or quantized weights is refused, never run wrongly.
void refuse_unimplemented(const Fields& f, const json& root, const std::string& source, Architecture arch) {
  const std::string act = f.optional_string("hidden_act", "silu");
  if (act != "silu" && act != "swish")
    fail("hidden_act = \"{}\" in '{}' is not supported (the engine implements silu)", act, source);
  if (f.has("quantization_config")) {
    const json& q = root["quantization_config"];
    const std::string method = q.is_object() && q.contains("quant_method") && q["quant_method"].is_string()
                                   ? q["quant_method"].get<std::string>()
                                   : q.dump();
    if (arch != Architecture::GptOss || method != "mxfp4")
      fail(
          "quantization_config in '{}' has quant_method {}: quantized checkpoints are not supported but gpt_oss's "
          "mxfp4 experts",
          source, method);
  }
  if (f.optional_bool("use_sliding_window", false))
    fail("use_sliding_window = true in '{}': sliding-window attention is not supported", source);
  if (f.has("layer_types") && arch != Architecture::GptOss) {
    const json& types = root["layer_types"];
    if (!types.is_array()) fail("field 'layer_types' in '{}' must be a list, got {}", source, types.dump());
    for (const json& t : types)
      if (t != "full_attention")
        fail("layer_types in '{}' lists {}: only full_attention layers are supported", source, t.dump());
  }
}

// Each layer's spec: the same for every layer but GPT-OSS's, whose layer_types alternate
// sliding_attention (a window of sliding_window positions) and full_attention.
std::vector<LayerSpec> parse_layers(const Fields& f, const json& root, const ModelConfig& c,
                                    const std::string& source) {
  std::vector<LayerSpec> layers(static_cast<size_t>(c.num_layers));
  if (c.arch != Architecture::GptOss) return layers;
  const int64_t window = f.bounded_int("sliding_window", kMaxPositions);
  if (!f.has("layer_types")) fail("missing required field 'layer_types' in '{}'", source);
  const json& types = root["layer_types"];
  if (!types.is_array() || static_cast<int64_t>(types.size()) != c.num_layers)
    fail("field 'layer_types' in '{}' must list num_hidden_layers = {} layer types, got {}", source, c.num_layers,
         types.dump());
  for (size_t i = 0; i < layers.size(); ++i) {
    if (types[i] == "sliding_attention")
      layers[i].attention_window = window;
    else if (types[i] != "full_attention")
      fail("layer_types[{}] in '{}' is {}: expected \"sliding_attention\" or \"full_attention\"", i, source,
           types[i].dump());
    layers[i].sinks = true;
    layers[i].moe = true;
  }
  return layers;
}

MoeConfig parse_moe(const Fields& f, const ModelConfig& c, const std::string& source) {
  MoeConfig moe;
  if (c.arch != Architecture::GptOss) return moe;
  moe.num_experts = f.bounded_int("num_local_experts", kMaxHeads);
  moe.experts_per_token = f.bounded_int("num_experts_per_tok", moe.num_experts);
  moe.swiglu_limit = f.positive_double("swiglu_limit", 7.0, 1e6);
  moe.mxfp4 = f.has("quantization_config");  // refuse_unimplemented let only mxfp4 through
  if (moe.mxfp4 && (c.hidden_size % 32 != 0 || c.intermediate_size % 32 != 0))
    fail(
        "quantization_config mxfp4 in '{}' quantizes the experts' inputs in blocks of 32: hidden_size ({}) and "
        "intermediate_size ({}) must be multiples of 32",
        source, c.hidden_size, c.intermediate_size);
  return moe;
}

// Rope settings live either in transformers-5 `rope_parameters` (theta included) or in the legacy
// top-level `rope_theta` + `rope_scaling` (null when unscaled; `type` in very old configs).
RopeConfig parse_rope(const json& root, const std::string& source) {
  const json* params = nullptr;
  std::string prefix;
  if (root.contains("rope_parameters") && !root["rope_parameters"].is_null()) {
    params = &root["rope_parameters"];
    prefix = "rope_parameters.";
  } else if (root.contains("rope_scaling") && !root["rope_scaling"].is_null()) {
    params = &root["rope_scaling"];
    prefix = "rope_scaling.";
  }
  if (params && !params->is_object())
    fail("field '{}' in '{}' must be an object or null, got {}", prefix.substr(0, prefix.size() - 1), source,
         params->dump());

  static const json kEmpty = json::object();
  Fields top(root, "", source);
  Fields p(params ? *params : kEmpty, prefix, source);
  RopeConfig rope;
  const double kMaxRopeValue = 1e12;
  rope.theta = p.has("rope_theta") ? p.positive_double("rope_theta", 0, kMaxRopeValue)
                                   : top.positive_double("rope_theta", 10000.0, kMaxRopeValue);
  std::string type = p.optional_string("rope_type", p.optional_string("type", "default"));
  if (type == "default") {
    rope.type = RopeType::Default;
  } else if (type == "linear") {
    rope.type = RopeType::Linear;
    rope.factor = p.required_positive_double("factor", kMaxRopeValue);
  } else if (type == "llama3") {
    // transformers requires all four for llama3; a silent default would change every frequency.
    rope.type = RopeType::Llama3;
    rope.factor = p.required_positive_double("factor", kMaxRopeValue);
    rope.low_freq_factor = p.required_positive_double("low_freq_factor", kMaxRopeValue);
    rope.high_freq_factor = p.required_positive_double("high_freq_factor", kMaxRopeValue);
    rope.original_max_position = p.bounded_int("original_max_position_embeddings", kMaxPositions);
    // The smoothing between the two bands divides by their difference.
    if (!(rope.high_freq_factor > rope.low_freq_factor))
      fail("field '{}high_freq_factor' ({}) in '{}' must be greater than low_freq_factor ({})", prefix,
           rope.high_freq_factor, source, rope.low_freq_factor);
  } else if (type == "yarn") {
    rope.type = RopeType::Yarn;
    rope.factor = p.required_positive_double("factor", kMaxRopeValue);
    rope.original_max_position = p.bounded_int("original_max_position_embeddings", kMaxPositions);
    rope.beta_fast = p.positive_double("beta_fast", 32.0, kMaxRopeValue);
    rope.beta_slow = p.positive_double("beta_slow", 1.0, kMaxRopeValue);
    rope.truncate = p.optional_bool("truncate", true);
    rope.attention_factor = p.has("attention_factor") ? p.positive_double("attention_factor", 1.0, kMaxRopeValue) : 0.0;
    if (p.has("mscale") || p.has("mscale_all_dim"))
      fail("'{}mscale' in '{}': yarn's mscale variants (DeepSeek) are not supported", prefix, source);
  } else {
    fail("unsupported rope type '{}' in '{}' (supported: default, linear, llama3, yarn)", type, source);
  }
  return rope;
}

}  // namespace

const char* architecture_name(Architecture arch) {
  switch (arch) {
    case Architecture::Llama: return "llama";
    case Architecture::Mistral: return "mistral";
    case Architecture::Qwen2: return "qwen2";
    case Architecture::Qwen3: return "qwen3";
    case Architecture::GptOss:
      return "gpt_oss";
  }
  return "?";
}

ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name) {
  const json root = parse_json_input(json_text, source_name);
  if (!root.is_object()) fail("'{}' is not a JSON object", source_name);
  Fields f(root, "", source_name);

  ModelConfig c;
  c.arch = parse_architecture(f, source_name);
  c.model_type = architecture_name(c.arch);
  refuse_unimplemented(f, root, source_name, c.arch);
  c.vocab_size = f.bounded_int("vocab_size", kMaxVocab);
  c.hidden_size = f.bounded_int("hidden_size", kMaxWidth);
  c.intermediate_size = f.bounded_int("intermediate_size", kMaxWidth);
  c.num_layers = f.bounded_int("num_hidden_layers", kMaxLayers);
  c.num_heads = f.bounded_int("num_attention_heads", kMaxHeads);
  c.num_kv_heads = f.has("num_key_value_heads") ? f.bounded_int("num_key_value_heads", kMaxHeads) : c.num_heads;
  if (c.num_heads % c.num_kv_heads != 0)
    fail("num_attention_heads ({}) must be a multiple of num_key_value_heads ({}) in '{}'", c.num_heads,
         c.num_kv_heads, source_name);
  if (f.has("head_dim")) {
    c.head_dim = f.bounded_int("head_dim", kMaxWidth);  // Qwen3: may differ from hidden / heads
  } else {
    if (c.hidden_size % c.num_heads != 0)
      fail("hidden_size ({}) is not divisible by num_attention_heads ({}) and no head_dim is given in '{}'",
           c.hidden_size, c.num_heads, source_name);
    c.head_dim = c.hidden_size / c.num_heads;
  }
  // Rotary embeddings rotate pairs of dimensions.
  if (c.head_dim % 2 != 0) fail("head_dim = {} in '{}' must be even (rotary embeddings rotate pairs)", c.head_dim, source_name);
  c.max_position_embeddings = f.has("max_position_embeddings") ? f.bounded_int("max_position_embeddings", kMaxPositions)
                                                               : default_max_positions(c.arch);
  c.rms_norm_eps = f.positive_double("rms_norm_eps", 1e-6, 1.0);
  // Mistral's window: attention within it is full attention, so the engine runs such a model
  // exactly by keeping sequences inside it (engine_factory.cpp). Qwen2/3 apply a window only with
  // use_sliding_window, refused above.
  if (c.arch == Architecture::Mistral && f.has("sliding_window")) c.sliding_window = f.bounded_int("sliding_window", kMaxPositions);
  c.tie_word_embeddings = f.optional_bool("tie_word_embeddings", false);
  // Qwen2 always has q/k/v biases (transformers ignores the key); the others opt in.
  c.attention_bias = c.arch == Architecture::Qwen2 ? true : f.optional_bool("attention_bias", false);
  c.qk_norm = c.arch == Architecture::Qwen3;
  // ModelConfig has no MLP bias; accepting one would load a model that silently drops weights.
  if (f.optional_bool("mlp_bias", false)) fail("mlp_bias = true in '{}' is not supported", source_name);
  c.rope = parse_rope(root, source_name);
  c.moe = parse_moe(f, c, source_name);
  c.layers = parse_layers(f, root, c, source_name);
  c.bos_token_id = f.optional_token("bos_token_id");
  c.eos_token_ids = f.token_list("eos_token_id");
  // A special token outside the vocabulary could never be fed or produced: the files disagree.
  for (int32_t id : c.eos_token_ids)
    if (id >= c.vocab_size) fail("eos_token_id {} in '{}' is outside the vocabulary [0, {})", id, source_name, c.vocab_size);
  if (c.bos_token_id && *c.bos_token_id >= c.vocab_size)
    fail("bos_token_id {} in '{}' is outside the vocabulary [0, {})", *c.bos_token_id, source_name, c.vocab_size);
  return c;
}

ModelConfig load_model_config(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path path(dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) fail("model directory '{}' does not exist", dir);
  // A config.json path works too, so tools can point at a stray config file.
  if (fs::is_directory(path, ec)) path /= "config.json";
  return parse_model_config(read_text_file(path.string(), "model config"), path.string());
}

}  // namespace drift
