#include "core/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace drift {

TokenLogprobs token_logprobs(const float* logits, int64_t vocab, int32_t token, int32_t top_n) {
  // log p_i = x_i - (max + log sum exp(x - max)), summed in double so 150K-entry rows stay exact.
  const float max = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_z = max + std::log(sum);
  auto logprob = [&](int32_t id) { return static_cast<float>(logits[id] - log_z); };

  TokenLogprobs out;
  out.chosen = {token, logprob(token)};
  const auto n = static_cast<int64_t>(std::clamp(top_n, 0, kMaxTopLogprobs));
  if (n == 0) return out;
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  const auto by_logit = [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  const auto take = std::min(n, vocab);
  std::partial_sort(ids.begin(), ids.begin() + take, ids.end(), by_logit);
  for (int64_t i = 0; i < take; ++i) out.top.push_back({ids[i], logprob(ids[i])});
  return out;
}

}  // namespace drift
