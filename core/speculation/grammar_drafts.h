#pragma once
// Speculation under a structured output: a draft node's grammar state is its parent's advanced by
// its token, from the request's committed state at the root. Nodes the grammar does not allow
// are cut (with their subtrees) before verification -- the target could never pick them -- and
// every verified row gets the mask of its node's state, so each row's pick is the one plain
// decoding would make at that position.
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/grammar/token_constraint.h"
#include "core/speculation/draft_tree.h"

namespace drift {

// states[i]: the grammar state after node i (GrammarAutomaton::kDead once the path left it).
std::vector<grammar::StateId> draft_states(grammar::TokenConstraint& constraint, grammar::StateId root,
                                           const DraftTree& tree);
// The tree without the nodes the grammar does not allow, nor their descendants.
DraftTree cut_to_grammar(const DraftTree& tree, grammar::TokenConstraint& constraint, grammar::StateId root);
// The grammar state of each row a chunk's logits give: the root's, then each draft node's (as
// draft_states). The engine makes them once per step and both passes of Engine::add_masks read
// them: the first prepares every mask no worker has started, the second takes the masks.
std::vector<grammar::StateId> row_states(grammar::TokenConstraint& constraint, grammar::StateId root,
                                         const DraftTree& tree);
// pick_rows' rows (root, then node i at 1 + i) given the masks of `states` (row_states). A row
// whose grammar state allows only the end tokens drops the adjustments that would hold those back
// (min_tokens): the grammar is done, and nothing else could be picked.
void add_grammar_masks(std::span<RowSampling> rows, std::span<const grammar::StateId> states,
                       grammar::TokenConstraint& constraint);

}  // namespace drift
