#include "core/model/model_layout.h"

#include <algorithm>

#include "core/error.h"

namespace drift {

size_t KVLayout::layer_bytes_per_token() const {
  // One K and one V vector per kv head.
  return 2 * static_cast<size_t>(num_kv_heads) * head_dim * dtype_size(dtype);
}
size_t KVLayout::bytes_per_token() const { return layer_bytes_per_token() * num_layers; }

size_t KVLayout::total_bytes(int64_t main_pages) const {
  return static_cast<size_t>(main_pages) * budget_bytes_per_page() +
         static_cast<size_t>(window_pages_for(main_pages)) * window_bytes_per_page();
}

int64_t KVLayout::pages_for_budget(size_t bytes) const {
  const size_t window_bytes = static_cast<size_t>(window_pages_wanted) * window_bytes_per_page();
  if (bytes >= window_bytes) {
    const auto pages = static_cast<int64_t>((bytes - window_bytes) / budget_bytes_per_page());
    if (pages >= window_pages_wanted) return pages;
  }
  // A budget smaller than the window group wants: both pools get the same page count.
  return static_cast<int64_t>(bytes / (budget_bytes_per_page() + window_bytes_per_page()));
}

namespace {

// Weights of one decoder layer, following the transformers modules of each architecture.
int64_t layer_parameter_count(const ModelConfig& c) {
  const int64_t h = c.hidden_size;
  const int64_t q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim;
  int64_t n = h * q_dim + 2 * h * kv_dim + q_dim * h;  // q, k, v, o projections
  if (c.attention_bias) {
    n += q_dim + 2 * kv_dim;
    // Llama/Mistral/Qwen3 put attention_bias on o_proj too; Qwen2's o_proj never has one.
    if (c.arch != Architecture::Qwen2) n += h;
  }
  if (c.qk_norm) n += 2 * c.head_dim;  // per-head q_norm and k_norm weights, shared by heads
  n += 2 * h;                          // input and post-attention RMSNorm
  if (c.arch != Architecture::GptOss) return n + 3 * h * c.intermediate_size;  // gate, up, down
  const int64_t e = c.moe.num_experts, inter = c.intermediate_size;
  n += c.num_heads;                                      // attention sinks
  n += e * h + e;                                        // router and its bias
  n += e * (h * 2 * inter + 2 * inter + inter * h + h);  // experts' gate/up and down, biases
  return n;
}

}  // namespace

int64_t ModelLayout::parameter_count() const {
  const ModelConfig& c = config;
  int64_t embeddings = c.vocab_size * c.hidden_size;
  int64_t n = embeddings + c.num_layers * layer_parameter_count(c) + c.hidden_size;  // + final norm
  if (!c.tie_word_embeddings) n += embeddings;  // separate lm_head
  return n;
}

KVLayout ModelLayout::kv_layout(int64_t block_size, DType dtype) const {
  // A zero page size would make every page computation divide by zero later.
  if (block_size <= 0) fail("KV block_size must be positive, got {}", block_size);
  KVLayout kv;
  kv.num_layers = config.num_layers;
  kv.num_kv_heads = config.num_kv_heads;
  kv.head_dim = config.head_dim;
  kv.block_size = block_size;
  kv.dtype = dtype;
  return kv;
}

int64_t ModelLayout::window_layers() const {
  return std::count_if(config.layers.begin(), config.layers.end(),
                       [](const LayerSpec& layer) { return layer.attention_window > 0; });
}

}  // namespace drift
