#pragma once
// ModelLayout / KVLayout: sizes derived from ModelConfig alone, so capacity is known before any
// allocation (weight bytes, KV bytes per token and per page, pages that fit a budget).
#include <cstddef>
#include <cstdint>

#include "core/model/model_config.h"
#include "core/tensor.h"

namespace drift {

struct KVLayout {
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t block_size = 0;   // tokens per page
  DType dtype = DType::F32;

  // K and V, every layer, one token.
  size_t bytes_per_token() const;
  size_t bytes_per_page() const { return bytes_per_token() * block_size; }
  int64_t pages_for_budget(size_t bytes) const { return bytes / bytes_per_page(); }
  int64_t pages_for_tokens(int64_t tokens) const { return (tokens + block_size - 1) / block_size; }
};

struct ModelLayout {
  ModelConfig config;
  // Parameter count and bytes of the weights at `dtype`.
  int64_t parameter_count() const;
  size_t weight_bytes(DType dtype) const { return parameter_count() * dtype_size(dtype); }
  KVLayout kv_layout(int64_t block_size, DType dtype) const;
};

}  // namespace drift
