#include "core/speculation/grammar_drafts.h"

#include <cmath>

namespace drift {

using grammar::GrammarAutomaton;
using grammar::StateId;

std::vector<StateId> draft_states(grammar::TokenConstraint& constraint, StateId root, const DraftTree& tree) {
  std::vector<StateId> states(tree.size(), GrammarAutomaton::kDead);
  for (size_t i = 0; i < tree.size(); ++i) {  // parents come first
    const StateId parent = tree.parents[i] < 0 ? root : states[tree.parents[i]];
    if (parent != GrammarAutomaton::kDead) states[i] = constraint.advance(parent, tree.tokens[i]);
  }
  return states;
}

DraftTree cut_to_grammar(const DraftTree& tree, grammar::TokenConstraint& constraint, StateId root) {
  const std::vector<StateId> states = draft_states(constraint, root, tree);
  std::vector<bool> keep(tree.size());
  for (size_t i = 0; i < tree.size(); ++i) keep[i] = states[i] != GrammarAutomaton::kDead;
  return keep_nodes(tree, keep);
}

namespace {

// min_tokens' hold (an `after` of -infinity) on the allowed end tokens is lifted.
void release_end_tokens(RowSampling& row, const grammar::TokenMask& mask) {
  for (LogitAdjustment& a : row.adjustments)
    if (mask.allows(a.token) && std::isinf(a.after) && a.after < 0) a.after = 0.0f;
}

}  // namespace

std::vector<StateId> row_states(grammar::TokenConstraint& constraint, StateId root, const DraftTree& tree) {
  std::vector<StateId> states{root};
  const std::vector<StateId> nodes = draft_states(constraint, root, tree);
  states.insert(states.end(), nodes.begin(), nodes.end());
  return states;
}

void add_grammar_masks(std::span<RowSampling> rows, std::span<const StateId> states,
                       grammar::TokenConstraint& constraint) {
  for (size_t r = 0; r < rows.size(); ++r) {
    rows[r].allowed = constraint.mask(states[r]);
    if (constraint.must_end(states[r])) release_end_tokens(rows[r], *rows[r].allowed);
  }
}

}  // namespace drift
