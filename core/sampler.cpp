#include "core/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <fmt/format.h>

namespace drift {

int32_t argmax(const float* logits, int64_t vocab) {
  return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
}

double uniform_for(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

namespace {

// Candidates sorted by probability (descending, ties by id), after temperature and top-k.
std::vector<std::pair<double, int32_t>> ranked_probs(const float* logits, int64_t vocab, const SamplingParams& p) {
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  const int64_t keep = p.top_k > 0 ? std::min<int64_t>(p.top_k, vocab) : vocab;
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), by_logit);
  ids.resize(keep);
  const double max_logit = logits[ids[0]];
  std::vector<std::pair<double, int32_t>> probs;
  double sum = 0.0;
  for (int32_t id : ids) {
    const double e = std::exp((logits[id] - max_logit) / p.temperature);
    probs.emplace_back(e, id);
    sum += e;
  }
  for (auto& entry : probs) entry.first /= sum;
  return probs;
}

// Keeps the smallest prefix whose mass reaches top_p, and drops tokens below min_p * max.
void apply_nucleus_and_min_p(std::vector<std::pair<double, int32_t>>& probs, const SamplingParams& p) {
  size_t keep = probs.size();
  if (p.top_p < 1.0) {
    double cumulative = 0.0;
    for (size_t i = 0; i < probs.size(); ++i) {
      cumulative += probs[i].first;
      if (cumulative >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0) {
    const double floor = p.min_p * probs[0].first;
    while (keep > 1 && probs[keep - 1].first < floor) --keep;
  }
  probs.resize(keep);
}

}  // namespace

int32_t sample_token(const float* logits, int64_t vocab, const SamplingParams& params, uint64_t seed,
                     uint64_t output_index) {
  if (params.temperature == 0.0) return argmax(logits, vocab);
  auto probs = ranked_probs(logits, vocab, params);
  apply_nucleus_and_min_p(probs, params);
  double total = 0.0;
  for (const auto& entry : probs) total += entry.first;
  const double target = uniform_for(seed, output_index) * total;
  double cumulative = 0.0;
  for (const auto& [prob, id] : probs) {
    cumulative += prob;
    if (target < cumulative) return id;
  }
  return probs.back().second;
}

}  // namespace drift
