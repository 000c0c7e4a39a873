#include "core/speculation/draft_budget_policy.h"

#include <algorithm>

namespace drift::speculation {
namespace {

// The expected tokens request `request`'s draft token at `depth` adds.
struct Gain {
  double gain;
  int32_t depth;
  uint32_t request;
};

// Every request's marginal gains, largest first. Within a request they do not increase with
// depth (E is concave), so the order takes each request's depths in turn (ties: shallower first).
std::vector<Gain> sorted_gains(const std::vector<BudgetRequest>& requests) {
  std::vector<Gain> gains;
  for (uint32_t r = 0; r < requests.size(); ++r) {
    const BudgetRequest& q = requests[r];
    if (!q.rates) continue;
    const int32_t depths = std::min(q.max_budget, q.rates->max_depth());
    double g = 1.0;
    for (int32_t d = 1; d <= depths; ++d) {
      g *= q.rates->rate(d);
      gains.push_back({g, d, r});
    }
  }
  std::sort(gains.begin(), gains.end(),
            [](const Gain& a, const Gain& b) { return a.gain != b.gain ? a.gain > b.gain : a.depth < b.depth; });
  return gains;
}

// The deepest budgets worth trying: every depth up to 4, then powers of two and their midpoints.
std::vector<int32_t> depth_caps(int32_t deepest) {
  std::vector<int32_t> caps;
  for (int32_t d = 1; d <= deepest; d = d < 4 ? d + 1 : d + d / 2) caps.push_back(d);
  if (caps.empty() || caps.back() != deepest) caps.push_back(deepest);
  return caps;
}

}  // namespace

BudgetChoice DraftBudgetPolicy::choose(int64_t base_rows, int64_t base_tokens,
                                       const std::vector<BudgetRequest>& requests, const StepTimeCurve& step_time,
                                       const DraftCost& draft_cost, double following_seconds) const {
  BudgetChoice choice;
  choice.budgets.assign(requests.size(), 0);
  choice.probes.assign(requests.size(), false);
  if (!step_time.predict(1)) {  // nothing measured yet: the fixed setting
    for (size_t r = 0; r < requests.size(); ++r) choice.budgets[r] = std::max(requests[r].max_budget, 0);
    return choice;
  }
  const std::vector<Gain> gains = sorted_gains(requests);
  // The forward's time at every total the walk can reach, predicted once.
  std::vector<double> forward_seconds(gains.size() + 1);
  for (size_t total = 0; total <= gains.size(); ++total)
    forward_seconds[total] = *step_time.predict(base_rows + static_cast<int64_t>(total));
  auto rate = [&](double tokens, size_t total, int32_t deepest) {
    const double seconds =
        forward_seconds[total] + draft_cost.predict(deepest, static_cast<int64_t>(total)) + following_seconds;
    return seconds > 0.0 ? tokens / seconds : 0.0;
  };
  const double plain = forward_seconds[0] > 0.0 ? static_cast<double>(base_tokens) / forward_seconds[0] : 0.0;

  int32_t deepest_allowed = 0;
  for (const Gain& g : gains) deepest_allowed = std::max(deepest_allowed, g.depth);
  double best = rate(static_cast<double>(base_tokens), 0, 0);
  int32_t best_cap = 0;
  size_t best_total = 0;
  for (int32_t cap : depth_caps(deepest_allowed)) {
    double tokens = static_cast<double>(base_tokens);
    size_t total = 0;
    int32_t deepest = 0;
    for (const Gain& g : gains) {
      if (g.depth > cap) continue;
      tokens += g.gain;
      ++total;
      deepest = std::max(deepest, g.depth);
      const double r = rate(tokens, total, deepest);
      if (r > best) {
        best = r;
        best_cap = cap;
        best_total = total;
      }
    }
  }
  // The best prefix of the walk: each request's depths are taken in order, so its budget is the
  // deepest one taken.
  size_t taken = 0;
  for (const Gain& g : gains) {
    if (taken == best_total) break;
    if (g.depth > best_cap) continue;
    choice.budgets[g.request] = std::max(choice.budgets[g.request], g.depth);
    ++taken;
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const BudgetRequest& q = requests[r];
    if (choice.budgets[r] == 0 && q.max_budget > 0 && q.steps_without_draft >= options_.probe_interval) {
      choice.budgets[r] = std::min(options_.probe_budget, q.max_budget);
      choice.probes[r] = true;
    }
  }
  choice.predicted_rate = best;
  choice.following_pays = following_seconds <= 0.0 || best > plain;
  return choice;
}

}  // namespace drift::speculation
