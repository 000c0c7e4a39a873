#pragma once
// Rotary inverse frequencies for a RopeConfig, computed as transformers does (fp32), including
// llama3 frequency-dependent scaling, linear position interpolation and YaRN.
#include <vector>

#include "core/model/model_config.h"

namespace drift {

struct RopeFrequencies {
  std::vector<float> inv_freq;   // [head_dim / 2]
  float attention_scale = 1.0f;  // multiplies cos/sin (yarn-style scalings; 1 otherwise)
};

RopeFrequencies compute_rope_frequencies(const RopeConfig& rope, int64_t head_dim);

}  // namespace drift
