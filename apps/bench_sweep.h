#pragma once
// drift bench --sweep: times the model forward itself on synthetic batches, on whatever backend
// the config names: decode at batch 1/8/32/64 and contexts 512/4K/32K, prefill of 512 and 8K
// tokens, and tree-verification steps of 4-32 nodes against a decode step. The device copy
// bandwidth is measured in the same run, so each row reports its fraction of the roofline
// ((weight + KV bytes read) / step time / bandwidth).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"

namespace drift::app {

// The batches the sweep decodes at (every one at 512; at 4K and 32K those long_batches names).
inline constexpr int64_t kSweepDecodeBatches[] = {1, 8, 32, 64};

struct SweepOptions {
  int64_t repeats = 10;       // timed forwards per row (median reported), after 2 warm-ups
  int64_t max_context = 32768;
  std::string only;           // comma-separated row kinds (decode,prefill,verify,graphs); empty: all
  // Decode batches also measured at the long contexts (4K, 32K); the KV pool is sized for the
  // largest (a model with small KV per token, e.g. GPT-OSS's, holds 64 x 32K).
  std::vector<int64_t> long_batches = {1};
};

// Runs the sweep; prints the table to stdout and returns the JSON.
nlohmann::json run_forward_sweep(const EngineConfig& config, const SweepOptions& options);

}  // namespace drift::app
