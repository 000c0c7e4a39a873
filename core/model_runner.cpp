#include "core/model_runner.h"

#include <cmath>

#include "core/error.h"

namespace drift {

ModelRunner::ModelRunner(ModelConfig config, ModelWeights weights, Backend& backend, int64_t num_pages,
                         int64_t block_size)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      backend_(backend),
      rope_(compute_rope_frequencies(config_.rope, config_.head_dim)),
      block_size_(block_size) {
  const int64_t slots = num_pages * block_size;
  for (int64_t i = 0; i < config_.num_layers; ++i)
    kv_.push_back({backend_.alloc({slots, config_.num_kv_heads, config_.head_dim}, backend_.compute_dtype()),
                   backend_.alloc({slots, config_.num_kv_heads, config_.head_dim}, backend_.compute_dtype())});
}

Tensor ModelRunner::alloc(std::vector<int64_t> shape) { return backend_.alloc(std::move(shape), backend_.compute_dtype()); }

void ModelRunner::copy_page(int32_t src, int32_t dst) { backend_.copy_page(kv_, src, dst, block_size_); }
void ModelRunner::move_slots(std::span<const int64_t> src, std::span<const int64_t> dst) {
  backend_.copy_slots(kv_, src, dst);
}

void ModelRunner::attention_block(const LayerWeights& w, LayerKV& kv, const ForwardBatch& batch, Tensor& x) {
  const int64_t t = batch.num_tokens(), d = config_.head_dim;
  const int64_t nh = config_.num_heads, nkv = config_.num_kv_heads;
  Tensor h = alloc({t, config_.hidden_size});
  backend_.rms_norm(x, w.input_norm, static_cast<float>(config_.rms_norm_eps), h);
  Tensor qkv = alloc({t, (nh + 2 * nkv) * d});
  backend_.linear(h, w.qkv, w.qkv_bias, qkv);
  Tensor q = alloc({t, nh, d}), k = alloc({t, nkv, d}), v = alloc({t, nkv, d});
  backend_.split_columns(qkv, {&q, &k, &v});
  if (!w.q_norm.empty()) {  // Qwen3: per-head RMSNorm before rope
    backend_.rms_norm(q, w.q_norm, static_cast<float>(config_.rms_norm_eps), q);
    backend_.rms_norm(k, w.k_norm, static_cast<float>(config_.rms_norm_eps), k);
  }
  backend_.rope(q, batch.positions, rope_.inv_freq, rope_.attention_scale);
  backend_.rope(k, batch.positions, rope_.inv_freq, rope_.attention_scale);
  backend_.write_kv(kv, k, v, batch.attention);
  Tensor attn = alloc({t, nh, d});
  backend_.attention(q, kv, batch.attention, 1.0f / std::sqrt(static_cast<float>(d)), block_size_, attn);
  Tensor o = alloc({t, config_.hidden_size});
  backend_.linear(attn, w.o_proj, w.o_bias, o);
  backend_.add_inplace(x, o);
}

void ModelRunner::mlp_block(const LayerWeights& w, Tensor& x) {
  const int64_t t = x.dim(0);
  Tensor h = alloc({t, config_.hidden_size});
  backend_.rms_norm(x, w.post_norm, static_cast<float>(config_.rms_norm_eps), h);
  Tensor gate_up = alloc({t, 2 * config_.intermediate_size});
  backend_.linear(h, w.gate_up, Tensor(), gate_up);
  Tensor act = alloc({t, config_.intermediate_size});
  backend_.silu_mul(gate_up, act);
  Tensor down = alloc({t, config_.hidden_size});
  backend_.linear(act, w.down, Tensor(), down);
  backend_.add_inplace(x, down);
}

void ModelRunner::set_capture_layers(std::vector<int32_t> layers) {
  captured_.clear();
  for (int32_t layer : layers) {
    DRIFT_CHECK(layer >= 0 && layer < config_.num_layers, "capture layer {} outside the model's {} layers", layer,
                config_.num_layers);
    captured_.emplace(layer, Tensor());
  }
}

const Tensor* ModelRunner::captured(int32_t layer) const {
  auto it = captured_.find(layer);
  return it == captured_.end() ? nullptr : &it->second;
}

void ModelRunner::reorder_captured(const std::vector<int32_t>& rows) {
  for (auto& [layer, hidden] : captured_) {
    if (hidden.empty()) continue;
    Tensor reordered = alloc({static_cast<int64_t>(rows.size()), config_.hidden_size});
    backend_.gather_rows(hidden, rows, reordered);
    hidden = std::move(reordered);
  }
}

Tensor ModelRunner::forward(const ForwardBatch& batch) {
  const int64_t t = batch.num_tokens();
  DRIFT_CHECK(t > 0, "empty forward batch");
  Tensor x = alloc({t, config_.hidden_size});
  backend_.embedding(weights_.embed, batch.tokens, x);
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    attention_block(weights_.layers[i], kv_[i], batch, x);
    mlp_block(weights_.layers[i], x);
    if (auto it = captured_.find(static_cast<int32_t>(i)); it != captured_.end()) {
      it->second = alloc({t, config_.hidden_size});
      backend_.copy(x, it->second);
    }
  }
  const int64_t rows = static_cast<int64_t>(batch.logit_rows.size());
  if (rows == 0) return Tensor::zeros({0, config_.vocab_size});
  Tensor selected = alloc({rows, config_.hidden_size});
  backend_.gather_rows(x, batch.logit_rows, selected);
  Tensor normed = alloc({rows, config_.hidden_size});
  backend_.rms_norm(selected, weights_.final_norm, static_cast<float>(config_.rms_norm_eps), normed);
  Tensor logits = alloc({rows, config_.vocab_size});
  backend_.linear(normed, weights_.lm_head, Tensor(), logits);
  return backend_.to_host_f32(logits);
}

}  // namespace drift
