#pragma once
// HeadConfig: an EAGLE-3 head's config.json, read with the semantics of vLLM's / SGLang's
// llama_eagle3 (and ../shared/tools/eagle3/README.md), checked against the target it drafts for.
// What the plugin cannot run is refused with an error naming the key and the file.
#include <cstdint>
#include <string>
#include <vector>

#include "drift/plugin.h"

namespace eagle3 {

struct HeadConfig {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t vocab_size = 0;          // the target vocabulary the head's d2t maps into
  int64_t draft_vocab_size = 0;    // rows of its lm_head
  int64_t target_hidden_size = 0;  // width of each captured target hidden state
  double rms_norm_eps = 1e-6;
  bool norm_before_residual = false;  // residual = hidden_norm(h) instead of h
  // Target layers whose INPUT residual stream the head reads (HF hidden_states[i]).
  std::vector<int32_t> aux_layer_ids;
};

// Reads <dir>/config.json. `target` is the engine's model; mismatches with it (hidden sizes,
// head_dim, vocabulary, rope theta) and unsupported features (more than one layer, another
// activation, biases) throw HostError naming the key and the file.
HeadConfig read_head_config(const std::string& dir, const drift_model_info_t& target);

}  // namespace eagle3
