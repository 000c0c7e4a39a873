#pragma once
// ModelWeights: a checkpoint's tensors, validated against ModelConfig (every expected tensor
// present with the expected shape) and uploaded to the backend. q/k/v and gate/up projections
// are fused at load time so each runs as one GEMM.
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/model_config.h"
#include "core/tensor.h"

namespace drift {

struct LayerWeights {
  Tensor input_norm;   // [hidden]
  Tensor qkv;          // [(heads + 2 * kv_heads) * head_dim, hidden]
  Tensor qkv_bias;     // [(heads + 2 * kv_heads) * head_dim] or empty
  Tensor q_norm;       // [head_dim] or empty (Qwen3)
  Tensor k_norm;
  Tensor o_proj;       // [hidden, heads * head_dim]
  Tensor o_bias;       // [hidden] or empty (Llama/Mistral/Qwen3 with attention_bias; never Qwen2)
  Tensor post_norm;    // [hidden]
  Tensor gate_up;      // [2 * intermediate, hidden]
  Tensor down;         // [hidden, intermediate]
};

struct ModelWeights {
  Tensor embed;        // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Tensor final_norm;   // [hidden]
  Tensor lm_head;      // [vocab, hidden] (the embedding when tied)
};

// Loads `<dir>`'s safetensors into `backend`. Throws DriftError naming the tensor, the file and
// the expected vs found shape for anything missing or mis-shaped.
ModelWeights load_model_weights(const std::string& dir, const ModelConfig& config, Backend& backend);

}  // namespace drift
