#pragma once
// ModelLayout / KVLayout: sizes derived from ModelConfig alone, so capacity is known before any
// allocation (weight bytes, KV bytes per token and per page, pages that fit a budget).
#include <algorithm>
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
  // The sliding-window page group (core/kv_window_pages.h), when on: its layers (of num_layers)
  // and the pages it wants (WindowPages::pages_to_never_run_short). 0: off.
  int64_t window_layers = 0;
  int64_t window_pages_wanted = 0;
  // What plugins keep per token of the main pool (their declare_memory, e.g. a draft model's
  // KV): budgeted with the pool.
  int64_t plugin_bytes_per_token = 0;

  // K and V, every layer, one token.
  size_t bytes_per_token() const;
  // One page of the main pool: the layers outside the window group.
  size_t bytes_per_page() const { return layer_bytes_per_token() * (num_layers - window_layers) * block_size; }
  size_t window_bytes_per_page() const { return layer_bytes_per_token() * window_layers * block_size; }
  // The window group's pages beside `main_pages`: never more than the main pool has, since a
  // sequence never holds more window blocks than main pages.
  int64_t window_pages_for(int64_t main_pages) const { return std::min(window_pages_wanted, main_pages); }
  // One main-pool page with the plugins' share beside it.
  size_t budget_bytes_per_page() const {
    return bytes_per_page() + static_cast<size_t>(plugin_bytes_per_token) * block_size;
  }
  // Both pools' bytes with `main_pages` pages in the main pool, the plugins' share included.
  size_t total_bytes(int64_t main_pages) const;
  // The plugins' share alone.
  size_t plugin_bytes(int64_t main_pages) const {
    return static_cast<size_t>(main_pages) * block_size * static_cast<size_t>(plugin_bytes_per_token);
  }
  // The most main-pool pages whose pools together fit `bytes`.
  int64_t pages_for_budget(size_t bytes) const;
  int64_t pages_for_tokens(int64_t tokens) const { return (tokens + block_size - 1) / block_size; }

 private:
  size_t layer_bytes_per_token() const;
};

struct ModelLayout {
  ModelConfig config;
  // Parameter count and bytes of the weights at `dtype`.
  int64_t parameter_count() const;
  size_t weight_bytes(DType dtype) const { return parameter_count() * dtype_size(dtype); }
  KVLayout kv_layout(int64_t block_size, DType dtype) const;
  // The sliding-window layers (LayerSpec::attention_window > 0).
  int64_t window_layers() const;
};

}  // namespace drift
