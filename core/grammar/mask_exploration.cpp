#include "core/grammar/mask_exploration.h"

#include <cmath>

namespace drift::grammar {

MaskExploration::MaskExploration(const std::shared_ptr<TokenConstraint>& constraint, size_t max_states)
    : constraint_(constraint), max_states_(max_states) {
  if (max_states_ == 0) return;
  frontier_.emplace(0.0, constraint->start());
  found_.emplace(constraint->start(), 0.0);
}

std::optional<StateId> MaskExploration::take() {
  if (frontier_.empty() || taken_ >= max_states_) return std::nullopt;
  const StateId state = frontier_.top().second;
  frontier_.pop();
  ++taken_;
  ++computing_;
  return state;
}

void MaskExploration::explored(StateId state, std::span<const std::pair<StateId, int32_t>> successors) {
  --computing_;
  // Tokens that stay in `state` (a string's characters, unbounded) are left out: the likelihood
  // is of where a request goes when it leaves, or a loop's exit would rank below everything.
  double tokens = 0;
  for (const auto& [next, count] : successors)
    if (next != state) tokens += count;
  const double likelihood = found_.at(state);
  for (const auto& [next, count] : successors) {
    if (count <= 0 || next == state || found_.contains(next)) continue;
    const double next_likelihood = likelihood + std::log(count / tokens);
    found_.emplace(next, next_likelihood);
    frontier_.emplace(next_likelihood, next);
  }
}

bool MaskExploration::finished() const { return computing_ == 0 && (frontier_.empty() || taken_ >= max_states_); }

}  // namespace drift::grammar
