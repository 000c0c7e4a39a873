#pragma once
// TokenConstraint: one compiled grammar over one vocabulary -- which tokens each grammar state
// allows (a bit mask over the vocabulary, computed once per state by walking the vocabulary
// trie, then cached) and the state after a token. The engine shares one per distinct grammar
// among its requests; each request keeps only its StateId.
//
// End tokens (the model's end-of-sequence ids) are allowed exactly where the grammar may end;
// they leave the state as it is. A state from which no token fits -- only possible when the
// vocabulary cannot spell what the grammar needs next -- allows the end tokens, so the request
// ends instead of picking from nothing.
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/grammar/grammar_automaton.h"
#include "core/grammar/token_mask.h"
#include "core/grammar/vocabulary_trie.h"

namespace drift::grammar {

class TokenConstraint {
 public:
  TokenConstraint(Grammar grammar, std::shared_ptr<const VocabularyTrie> vocabulary, std::vector<int32_t> end_tokens);

  StateId start() const { return automaton_.start(); }
  // The state after `token`: kDead exactly when mask(state) leaves it out (its bytes leave the
  // grammar, it has none, or it is an end token where the grammar cannot end); end tokens keep
  // `state`.
  StateId advance(StateId state, int32_t token);
  bool allows(StateId state, int32_t token);
  // The tokens allowed in `state`, cached per state.
  std::shared_ptr<const TokenMask> mask(StateId state);
  // Whether `state` allows nothing but the end tokens (min_tokens must not hold those back);
  // found with the mask, once per state.
  bool must_end(StateId state);

  GrammarAutomaton& automaton() { return automaton_; }
  size_t cached_masks() const { return masks_.size(); }

 private:
  struct StateTokens {
    std::shared_ptr<const TokenMask> mask;
    bool only_end = false;
  };
  const StateTokens& state_tokens(StateId state);
  TokenMask compute_mask(StateId state);
  bool is_end(int32_t token) const;

  GrammarAutomaton automaton_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  std::vector<int32_t> end_tokens_;
  std::unordered_map<StateId, StateTokens> masks_;
};

}  // namespace drift::grammar
