#pragma once
// Sampler: picks the next token from one row of logits. Greedy for temperature 0; otherwise
// temperature, top-k, top-p and min-p filtering, then a draw whose random number depends only on
// (seed, index of the token in the output) — so the same seed gives the same output whatever
// the batch, and a preempted-and-recomputed request reproduces its tokens exactly.
#include <cstdint>

#include "core/sampling_params.h"

namespace drift {

int32_t argmax(const float* logits, int64_t vocab);

// Uniform [0, 1) number for draw `index` of stream `seed` (SplitMix64; stateless).
double uniform_for(uint64_t seed, uint64_t index);

int32_t sample_token(const float* logits, int64_t vocab, const SamplingParams& params, uint64_t seed,
                     uint64_t output_index);

}  // namespace drift
