#pragma once
// Logits shaping (SamplingParams' logit_bias, penalties and min_tokens) as sparse adjustments of
// one logit row: the logit x of `token` becomes y = x + before; y = y > 0 ? y / positive_divisor :
// y * negative_factor; y += after. vLLM applies them in that order too (the bias, then the
// repetition penalty, then the frequency and presence penalties). They are computed on the host
// from the request's tokens for each logit row of a step -- the root and every draft node, whose
// path counts as output -- and applied where the logits are (Backend::pick_tokens) before the
// pick, so a verified node sees what plain decoding would have at its position.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/sampling_params.h"

namespace drift {

struct LogitAdjustment {
  int32_t token = 0;
  float before = 0.0f;
  float positive_divisor = 1.0f, negative_factor = 1.0f;
  float after = 0.0f;
};

// The tokens a request has seen: each one's count in the output and whether the prompt holds it.
class TokenOccurrences {
 public:
  TokenOccurrences(std::span<const int32_t> prompt, std::span<const int32_t> output);

  struct Seen {
    int32_t in_output = 0;
    bool in_prompt = false;
  };
  const std::unordered_map<int32_t, Seen>& tokens() const { return seen_; }

 private:
  std::unordered_map<int32_t, Seen> seen_;
};

// The adjustments of the row that picks output token number `output_index` after the tokens
// `seen` counts plus `path` (a draft node's ancestors and itself, in order: output too). eos_ids:
// the model's end-of-sequence tokens (min_tokens holds them back with stop_token_ids). Empty when
// the params shape nothing.
std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& params, const TokenOccurrences& seen,
                                               std::span<const int32_t> path, int64_t output_index,
                                               std::span<const int32_t> eos_ids);

// One row, in place (a token outside [0, vocab) is skipped: the request was validated).
void apply_logit_adjustments(float* row, int64_t vocab, std::span<const LogitAdjustment> adjustments);

}  // namespace drift
