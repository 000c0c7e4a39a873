#pragma once
// ModelConfig: the architecture hyper-parameters of a Hugging Face checkpoint, read from its
// config.json alone. Supports Llama (2/3, incl. llama3 rope scaling), Mistral, Qwen2 (q/k/v
// bias), Qwen3 (q/k norm, explicit head_dim) and GPT-OSS (sliding-window and full layers,
// attention sinks, YaRN rope, a mixture of experts), with rope settings in both conventions
// (top-level rope_theta/rope_scaling and transformers-5 rope_parameters). What differs between
// the layers of one model is data (LayerSpec), which the model runner executes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drift {

enum class Architecture { Llama, Mistral, Qwen2, Qwen3, GptOss };
const char* architecture_name(Architecture arch);

enum class RopeType { Default, Llama3, Linear, Yarn };

struct RopeConfig {
  RopeType type = RopeType::Default;
  double theta = 10000.0;
  double factor = 1.0;                 // llama3 / linear
  double low_freq_factor = 1.0;        // llama3
  double high_freq_factor = 4.0;       // llama3
  int64_t original_max_position = 8192;      // llama3, yarn
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn: the rotation counts bounding the ramp
  bool truncate = true;                      // yarn: round the ramp's bounds to whole dimensions
  double attention_factor = 0.0;             // yarn: cos/sin scale (0: 0.1 ln(factor) + 1)
};

// One decoder layer as the runner executes it. attention_window: the positions a query sees
// (its own and the window - 1 before it; 0: all); sinks: a learned logit per head joins each
// softmax's denominator (GPT-OSS); moe: the MLP is a mixture of experts (else dense SwiGLU).
struct LayerSpec {
  int64_t attention_window = 0;
  bool sinks = false;
  bool moe = false;
};

// GPT-OSS's mixture of experts: a biased router picks experts_per_token of num_experts by logit
// and weighs them by the softmax over the chosen logits; each expert is a SwiGLU with biases and
// clamped inputs (gate <= limit, |up| <= limit, out = (up + 1) * gate * sigmoid(alpha * gate)).
struct MoeConfig {
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  double swiglu_limit = 7.0;
  double swiglu_alpha = 1.702;
  // The experts' weights are stored as MXFP4 blocks and scales (quantization_config quant_method
  // "mxfp4", as the published gpt-oss checkpoints), not dense.
  bool mxfp4 = false;
};

struct ModelConfig {
  Architecture arch = Architecture::Llama;
  std::string model_type;              // config.json "model_type"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;                // explicit, or hidden_size / num_heads
  int64_t max_position_embeddings = 0;  // absent: transformers' default (llama 2048, mistral
                                       // 131072, qwen2/qwen3 32768)
  int64_t sliding_window = 0;  // Mistral's attention window; 0: none (sequences are kept
                               // within it, since it is full attention within it). GPT-OSS's
                               // windowed layers carry theirs in LayerSpec.
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool attention_bias = false;         // q/k/v projections carry a bias (Qwen2: always)
  bool qk_norm = false;                // per-head RMSNorm on q and k (Qwen3)
  RopeConfig rope;
  MoeConfig moe;                  // GPT-OSS
  std::vector<LayerSpec> layers;  // [num_layers]
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;
};

// Parses `<dir>/config.json`. Throws DriftError naming the file and the missing/invalid field.
ModelConfig load_model_config(const std::string& dir);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source_name);

}  // namespace drift
