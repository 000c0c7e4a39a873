#pragma once
// Log-probabilities a request asks for (SamplingParams::logprobs): the committed token's and the
// n most likely tokens' at each output position, from the model's own distribution -- the
// log-softmax of the raw logits, before temperature, top-k/p or min-p (OpenAI's and vLLM's
// default meaning), so they do not depend on how the token was picked.
#include <cstdint>
#include <vector>

namespace drift {

// How many alternatives one position may report (OpenAI's limit for top_logprobs).
inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  TokenLogprob chosen;            // the committed token
  std::vector<TokenLogprob> top;  // the top_n most likely, descending (ties: lower id first)
};

// For one row of logits [vocab]: `token`'s log-probability and the top_n most likely tokens'.
TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t token, int32_t top_n);

}  // namespace drift
