#include "core/speculation/adaptive_speculation.h"

#include <algorithm>
#include <unordered_set>

namespace drift::speculation {

AdaptiveSpeculation::AdaptiveSpeculation(int32_t max_depth, DraftBudgetOptions options)
    : max_depth_(std::max(max_depth, 0)),
      options_(options),
      policy_(options),
      population_(max_depth_, AcceptancePrior{0.6, 2.0, 0.995}) {}

AdaptiveSpeculation::RequestState& AdaptiveSpeculation::state(uint64_t seq) {
  return requests_.try_emplace(seq, population_).first->second;
}

bool AdaptiveSpeculation::retired(uint64_t seq) const {
  const auto it = requests_.find(seq);
  return it != requests_.end() && it->second.kept_at_zero >= options_.retire_after;
}

bool AdaptiveSpeculation::pays(uint64_t seq) const {
  const auto it = requests_.find(seq);
  return it != requests_.end() && it->second.paying >= options_.retire_after;
}

void AdaptiveSpeculation::observe_verification(uint64_t seq, int32_t drafted_depth, int32_t accepted) {
  state(seq).rates.observe(drafted_depth, accepted);
  population_.observe(drafted_depth, accepted);
}

std::vector<int32_t> AdaptiveSpeculation::budgets(std::span<const uint64_t> seqs, std::span<const int32_t> caps,
                                                  int64_t base_rows, int64_t base_tokens, double following_seconds) {
  const std::unordered_set<uint64_t> live(seqs.begin(), seqs.end());
  std::erase_if(requests_, [&](const auto& entry) { return !live.contains(entry.first); });
  std::vector<BudgetRequest> asks;
  asks.reserve(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    RequestState& s = state(seqs[i]);
    asks.push_back({&s.rates, std::clamp(caps[i], 0, max_depth_), s.steps_without_draft});
  }
  const BudgetChoice choice = policy_.choose(base_rows, base_tokens, asks, step_time_, draft_cost_, following_seconds);
  for (size_t i = 0; i < seqs.size(); ++i) {
    RequestState& s = state(seqs[i]);
    const int32_t b = choice.budgets[i];
    s.steps_without_draft = b > 0 ? 0 : s.steps_without_draft + 1;
    const bool drafting = b > 0 && !choice.probes[i] && choice.following_pays;
    s.paying = drafting ? s.paying + 1 : 0;
    s.kept_at_zero = drafting ? 0 : s.kept_at_zero + 1;
    chosen_[b]++;
  }
  return choice.budgets;
}

}  // namespace drift::speculation
