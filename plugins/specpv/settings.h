#pragma once
// The specpv plugin's [plugins.<name>] table (SpecPV, docs/specpv.md):
//   block_size = 16              tokens per block; must equal the engine's KV page size
//   n_sink_blocks = 2            leading blocks every partial verification attends to
//   n_retrieval_blocks = 256     blocks retrieved per (layer, kv head) by query-aware scores
//   n_window_blocks = 8          blocks before the last full verification's end (recency window)
//   n_spec_tokens_buf = 20       at most this many tokens committed since the last full
//                                verification before the next one is due (the buffer)
//   partial_threshold = 4096     contexts shorter than this always verify fully
//   full_refresh_interval = 32   at most this many partial steps between two full verifications
// A wrong type, an out-of-range value or an unknown key is an error naming the key.
#include <cstdint>
#include <string>

namespace specpv {

struct Settings {
  int64_t block_size = 16;
  int64_t n_sink_blocks = 2;
  int64_t n_retrieval_blocks = 256;
  int64_t n_window_blocks = 8;
  int64_t n_spec_tokens_buf = 20;
  int64_t partial_threshold = 4096;
  int64_t full_refresh_interval = 32;
};

// Throws drift::plugin::Error (DRIFT_ERROR_INVALID_ARGUMENT) naming the key and the value.
Settings read_settings(const std::string& settings_toml);

}  // namespace specpv
