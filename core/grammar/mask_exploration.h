#pragma once
// MaskExploration: the order in which mask workers compute a new grammar's masks before any
// request asks for them. Without it the first requests with a new schema find their masks
// missing step after step (a cold mask costs about half a millisecond on a 128K vocabulary,
// several percent of a GPU decode step at batch 1): workers computing one token ahead
// (MaskWorkers::compute_ahead) cannot keep up with a batch of requests spreading over a string's
// states.
//
// From the start state outwards, most likely first: a state's likelihood is the product, along the
// path that found it, of the share of the allowed tokens leading on (to another state: a loop's
// tokens are left out) -- what a request drawing among the allowed tokens alike would reach -- so
// a string's plain characters come before its escape and multi-byte states. Stops after `max_states` states: a schema
// with bounded strings has thousands, most of them rarely visited. Not thread-safe: MaskWorkers guards it with its
// lock.
#include <cstddef>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/grammar/token_constraint.h"

namespace drift::grammar {

class MaskExploration {
 public:
  // Holds the constraint weakly: a grammar no request or registry keeps is not explored further.
  MaskExploration(const std::shared_ptr<TokenConstraint>& constraint, size_t max_states);

  // The next state whose mask to compute, or nullopt when none is left for now (a state being
  // computed may yet add its successors).
  std::optional<StateId> take();
  // `state`'s mask is computed: its successors, each with the tokens that lead there, join the
  // frontier (none when computing it failed).
  void explored(StateId state, std::span<const std::pair<StateId, int32_t>> successors);
  // Nothing left to take and nothing being computed.
  bool finished() const;
  // The constraint, or nullptr once nothing else holds it.
  std::shared_ptr<TokenConstraint> constraint() const { return constraint_.lock(); }
  bool expired() const { return constraint_.expired(); }
  size_t taken() const { return taken_; }

 private:
  std::weak_ptr<TokenConstraint> constraint_;
  size_t max_states_;
  size_t taken_ = 0;
  int computing_ = 0;
  std::priority_queue<std::pair<double, StateId>> frontier_;  // (log likelihood, state), likeliest on top
  std::unordered_map<StateId, double> found_;                 // every state queued, its log likelihood
};

}  // namespace drift::grammar
