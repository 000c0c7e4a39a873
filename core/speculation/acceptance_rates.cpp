#include "core/speculation/acceptance_rates.h"

#include <algorithm>

namespace drift::speculation {

AcceptanceRates::AcceptanceRates(int32_t max_depth, AcceptancePrior prior)
    : prior_(prior),
      prior_rate_(std::max(max_depth, 0), prior.rate),
      success_(std::max(max_depth, 0), 0.0),
      trials_(std::max(max_depth, 0), 0.0) {}

AcceptanceRates::AcceptanceRates(const AcceptanceRates& population, AcceptancePrior prior)
    : AcceptanceRates(population.max_depth(), prior) {
  for (int32_t k = 1; k <= max_depth(); ++k) prior_rate_[k - 1] = population.rate(k);
}

void AcceptanceRates::observe(int32_t drafted_depth, int32_t accepted) {
  drafted_depth = std::clamp(drafted_depth, 0, max_depth());
  if (drafted_depth == 0) return;
  accepted = std::clamp(accepted, 0, drafted_depth);
  ++observations_;
  // Depths 1..accepted succeeded; accepted + 1 failed (when it was drafted).
  const int32_t tried = std::min(drafted_depth, accepted + 1);
  for (int32_t k = 0; k < tried; ++k) {
    success_[k] = success_[k] * prior_.decay + (k < accepted ? 1.0 : 0.0);
    trials_[k] = trials_[k] * prior_.decay + 1.0;
  }
}

double AcceptanceRates::rate(int32_t depth) const {
  if (depth < 1 || depth > max_depth()) return 0.0;
  const int32_t k = depth - 1;
  return (success_[k] + prior_rate_[k] * prior_.weight) / (trials_[k] + prior_.weight);
}

double AcceptanceRates::gain(int32_t depth) const {
  double g = 1.0;
  for (int32_t k = 1; k <= depth; ++k) g *= rate(k);
  return depth >= 1 ? g : 0.0;
}

double AcceptanceRates::expected_accepted(int32_t depth) const {
  double g = 1.0, sum = 0.0;
  for (int32_t k = 1; k <= std::min(depth, max_depth()); ++k) {
    g *= rate(k);
    sum += g;
  }
  return sum;
}

}  // namespace drift::speculation
