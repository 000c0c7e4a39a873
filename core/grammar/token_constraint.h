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
//
// Thread-safe: mask workers (mask_workers.h) compute masks ahead, while the engine thread reads
// them. Each state's mask is computed once, by whichever thread asks first; a thread that asks
// while another computes it waits for that one.
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
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
  // Where one token leads from `state`: the distinct states after its allowed tokens, those
  // reached by the most tokens first (at most kMaxSuccessors), found by its mask's walk. A
  // request in `state` is in one of them after its next token: what workers compute ahead.
  std::vector<StateId> successors(StateId state);
  static constexpr size_t kMaxSuccessors = 64;
  // successors(state), each with how many of `state`'s allowed tokens lead there.
  std::vector<std::pair<StateId, int32_t>> weighted_successors(StateId state);
  // successors(state) the first time it is called for `state` since its mask was computed, then
  // none: the engine queues a state's successors for the workers once, not every step. None
  // either while the mask cache is more than half full: a grammar with more states than the
  // cache holds would otherwise have masks in use evicted for guesses.
  std::vector<StateId> claim_successors(StateId state);

  // Whether `state`'s mask is cached, or being computed.
  bool has_mask(StateId state);
  // Computes `state`'s mask unless a thread has already started it; never waits. Whether this
  // call computed it.
  bool prepare(StateId state);

  GrammarAutomaton& automaton() { return automaton_; }
  size_t cached_masks();
  // Masks cached per constraint; past this many, the cache starts over (a mask in use stays alive
  // through its shared_ptr). 4096 masks of a 128K vocabulary take 64 MiB.
  static constexpr size_t kMaxCachedMasks = 4096;
  // The bytes of one mask over this vocabulary.
  size_t mask_bytes() const { return (static_cast<size_t>(vocabulary_->vocab_size()) + 31) / 32 * sizeof(uint32_t); }

 private:
  struct StateTokens {
    std::shared_ptr<const TokenMask> mask;
    bool only_end = false;
    std::vector<StateId> successors;
    std::vector<int32_t> successor_tokens;  // per successor: the tokens that lead there
    mutable std::atomic<bool> successors_claimed{false};
  };
  using Pending = std::shared_future<std::shared_ptr<const StateTokens>>;
  std::shared_ptr<const StateTokens> state_tokens(StateId state);
  // The entry for `state`: ready, being computed elsewhere, or (claimed true) now this thread's
  // to compute and publish through `claim`.
  Pending find_or_claim(StateId state, std::promise<std::shared_ptr<const StateTokens>>& claim, bool& claimed);
  void publish(StateId state, std::promise<std::shared_ptr<const StateTokens>>& claim);
  std::shared_ptr<const StateTokens> compute(StateId state);
  bool is_end(int32_t token) const;

  GrammarAutomaton automaton_;
  std::shared_ptr<const VocabularyTrie> vocabulary_;
  std::vector<int32_t> end_tokens_;
  std::mutex mutex_;  // guards masks_
  std::unordered_map<StateId, Pending> masks_;
};

}  // namespace drift::grammar
