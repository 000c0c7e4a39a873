#pragma once
// ModelWeights: a checkpoint's tensors, validated against ModelConfig (every expected tensor
// present with the expected shape) and uploaded to the backend. q/k/v and gate/up projections
// are fused at load time so each runs as one GEMM.
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/model/model_config.h"
#include "core/tensor.h"

namespace drift {

// qkv (with its bias) and gate_up are loaded with a pair_span (Backend::load_weight) unless the
// model has q/k norms (then qkv is stacked): their row order is the backend's, so they go only to
// linear_qkv_rope_write and linear_swiglu.
struct LayerWeights {
  Tensor input_norm;   // [hidden]
  Tensor qkv;          // [(heads + 2 * kv_heads) * head_dim, hidden]: q | k | v rows
  Tensor qkv_bias;     // [(heads + 2 * kv_heads) * head_dim] or empty
  Tensor q_norm;       // [head_dim] or empty (Qwen3)
  Tensor k_norm;
  Tensor o_proj;       // [hidden, heads * head_dim]
  Tensor o_bias;       // [hidden] or empty (Llama/Mistral/Qwen3 with attention_bias; never Qwen2)
  Tensor post_norm;    // [hidden]
  Tensor gate_up;      // [2 * intermediate, hidden]: gate | up rows (dense MLP)
  Tensor down;         // [hidden, intermediate]
  Tensor sinks;        // [heads] (LayerSpec::sinks) or empty
  MoeWeights moe;      // LayerSpec::moe: the router and experts (core/backend.h) instead of gate_up / down
};

struct ModelWeights {
  Tensor embed;        // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Tensor final_norm;   // [hidden]
  Tensor lm_head;      // [vocab, hidden] (the embedding when tied)
};

// Loads `<dir>`'s safetensors into `backend`. Throws DriftError naming the tensor and the file
// for anything missing, mis-shaped (with expected vs found shape) or left over that config.json
// says the model does not have (e.g. q_proj.bias with attention_bias = false, a layer beyond
// num_hidden_layers). Harmless extras (rotary_emb.inv_freq; lm_head.weight with tied embeddings)
// are logged as warnings.
ModelWeights load_model_weights(const std::string& dir, const ModelConfig& config, Backend& backend);
// One tensor-parallel rank's part (core/parallel/shard_plan.h): its heads' q/k/v rows and o_proj
// columns, its MLP columns, its vocabulary rows of the embedding (then one zero row) and LM head;
// norms whole; biases of row-parallel projections on rank 0 only.
struct ShardPlan;
ModelWeights load_model_weights(const std::string& dir, const ModelConfig& config, const ShardPlan& shard,
                                Backend& backend);

// Only the weights host->model_weight serves (embedding, final norm, LM head; no layers): what a
// plugin's create() can ask for when no engine runs (`drift plugins list`). Shapes are checked as
// above; other tensors are not read.
ModelWeights load_shared_weights(const std::string& dir, const ModelConfig& config, Backend& backend);

}  // namespace drift
