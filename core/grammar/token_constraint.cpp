#include "core/grammar/token_constraint.h"

#include <algorithm>
#include <array>

namespace drift::grammar {

TokenConstraint::TokenConstraint(Grammar grammar, std::shared_ptr<const VocabularyTrie> vocabulary,
                                 std::vector<int32_t> end_tokens)
    : automaton_(std::move(grammar)), vocabulary_(std::move(vocabulary)), end_tokens_(std::move(end_tokens)) {
  std::erase_if(end_tokens_, [&](int32_t id) { return id < 0 || id >= vocabulary_->vocab_size(); });
}

bool TokenConstraint::is_end(int32_t token) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end();
}

StateId TokenConstraint::advance(StateId state, int32_t token) {
  if (is_end(token)) return mask(state)->allows(token) ? state : GrammarAutomaton::kDead;
  const std::string* bytes = vocabulary_->bytes(token);
  return bytes ? automaton_.advance(state, *bytes) : GrammarAutomaton::kDead;
}

bool TokenConstraint::allows(StateId state, int32_t token) {
  return token >= 0 && token < vocabulary_->vocab_size() && mask(state)->allows(token);
}

TokenConstraint::Pending TokenConstraint::find_or_claim(StateId state,
                                                        std::promise<std::shared_ptr<const StateTokens>>& claim,
                                                        bool& claimed) {
  std::lock_guard lock(mutex_);
  if (auto it = masks_.find(state); it != masks_.end()) {
    claimed = false;
    return it->second;
  }
  if (masks_.size() >= kMaxCachedMasks) masks_.clear();  // a mask in use lives on in its shared_ptr
  claimed = true;
  return masks_.emplace(state, claim.get_future().share()).first->second;
}

std::shared_ptr<const TokenConstraint::StateTokens> TokenConstraint::state_tokens(StateId state) {
  std::promise<std::shared_ptr<const StateTokens>> claim;
  bool claimed = false;
  Pending pending = find_or_claim(state, claim, claimed);
  if (claimed) publish(state, claim);
  return pending.get();  // waits while another thread computes it
}

void TokenConstraint::publish(StateId state, std::promise<std::shared_ptr<const StateTokens>>& claim) {
  try {
    claim.set_value(compute(state));
  } catch (...) {  // e.g. out of memory: whoever waits sees the error, and a later call tries again
    claim.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    masks_.erase(state);
  }
}

bool TokenConstraint::prepare(StateId state) {
  std::promise<std::shared_ptr<const StateTokens>> claim;
  bool claimed = false;
  find_or_claim(state, claim, claimed);
  if (claimed) publish(state, claim);
  return claimed;
}

bool TokenConstraint::has_mask(StateId state) {
  std::lock_guard lock(mutex_);
  return masks_.contains(state);
}

size_t TokenConstraint::cached_masks() {
  std::lock_guard lock(mutex_);
  return masks_.size();
}

std::shared_ptr<const TokenMask> TokenConstraint::mask(StateId state) { return state_tokens(state)->mask; }

bool TokenConstraint::must_end(StateId state) { return state_tokens(state)->only_end; }

std::vector<StateId> TokenConstraint::successors(StateId state) { return state_tokens(state)->successors; }

std::vector<std::pair<StateId, int32_t>> TokenConstraint::weighted_successors(StateId state) {
  const auto tokens = state_tokens(state);
  std::vector<std::pair<StateId, int32_t>> weighted;
  for (size_t i = 0; i < tokens->successors.size(); ++i)
    weighted.emplace_back(tokens->successors[i], tokens->successor_tokens[i]);
  return weighted;
}

std::vector<StateId> TokenConstraint::claim_successors(StateId state) {
  const auto tokens = state_tokens(state);
  if (cached_masks() > kMaxCachedMasks / 2) return {};
  return tokens->successors_claimed.exchange(true) ? std::vector<StateId>() : tokens->successors;
}

namespace {

// The states tokens lead to during one mask's walk, with how many tokens lead to each: a small
// open-addressing table (a walk over a 128K vocabulary reaches tens of states, and adds one per
// token-ending trie node, so it must cost a few nanoseconds). Past half full it keeps counting
// the states it has and takes no new ones.
class Successors {
 public:
  Successors() { keys_.fill(GrammarAutomaton::kDead); }
  void add(StateId state, int32_t tokens) {
    for (size_t i = (static_cast<uint32_t>(state) * 2654435761u) & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
      if (keys_[i] == state) {
        counts_[i] += tokens;
        return;
      }
      if (keys_[i] != GrammarAutomaton::kDead) continue;
      if (used_ >= kSlots / 2) return;
      keys_[i] = state;
      counts_[i] = tokens;
      ++used_;
      return;
    }
  }
  // At most `limit` (state, tokens), reached by the most tokens first.
  std::vector<std::pair<StateId, int32_t>> most_reached(size_t limit) const {
    std::vector<std::pair<int32_t, StateId>> found;
    for (size_t i = 0; i < kSlots; ++i)
      if (keys_[i] != GrammarAutomaton::kDead) found.emplace_back(-counts_[i], keys_[i]);
    std::sort(found.begin(), found.end());
    std::vector<std::pair<StateId, int32_t>> states;
    for (size_t i = 0; i < found.size() && i < limit; ++i) states.emplace_back(found[i].second, -found[i].first);
    return states;
  }

 private:
  static constexpr size_t kSlots = 1024;
  std::array<StateId, kSlots> keys_;  // kDead: empty (a dead state is never a successor)
  std::array<int32_t, kSlots> counts_{};
  size_t used_ = 0;
};

}  // namespace

std::shared_ptr<const TokenConstraint::StateTokens> TokenConstraint::compute(StateId state) {
  TokenMask mask;
  mask.words.assign((static_cast<size_t>(vocabulary_->vocab_size()) + 31) / 32, 0);
  const VocabularyTrie& trie = *vocabulary_;
  Successors successors, runs;  // runs: where plain subtrees were allowed whole, and their tokens
  bool any = false;
  struct Visit {
    int32_t node;
    StateId state;
  };
  std::vector<Visit> todo{{VocabularyTrie::kRoot, state}};
  while (!todo.empty()) {
    const Visit at = todo.back();
    todo.pop_back();
    const VocabularyTrie::Node& node = trie.node(at.node);
    const GrammarAutomaton::TransitionRow* row = automaton_.cached_transitions(at.state);
    // Last edge first: the stack then hands out the children in byte order.
    for (int32_t e = node.first_edge + node.num_edges - 1; e >= node.first_edge; --e) {
      const VocabularyTrie::Edge edge = trie.edge(e);
      StateId next = row ? (*row)[edge.byte].load(std::memory_order_acquire) : -1;
      if (next < 0) {
        next = automaton_.advance(at.state, edge.byte);
        row = automaton_.cached_transitions(at.state);
      }
      if (next == GrammarAutomaton::kDead) continue;
      const VocabularyTrie::Node& child = trie.node(edge.child);
      if (child.num_tokens > 0) {
        for (int32_t t = child.first_token; t < child.first_token + child.num_tokens; ++t) mask.allow(trie.token(t));
        successors.add(next, child.num_tokens);
        any = true;
      }
      if (child.num_edges == 0) continue;
      // Below the child only plain bytes, no more of them than the grammar takes in a row from
      // here (each alike): every token there is allowed, without a walk.
      if (child.plain_height > 0 && child.plain_height <= automaton_.plain_run(next)) {
        const int32_t below = child.first_token + child.num_tokens;
        for (int32_t t = below; t < child.subtree_end; ++t) mask.allow(trie.token(t));
        if (child.subtree_end > below) {
          runs.add(next, child.subtree_end - below);
          any = true;
        }
        continue;
      }
      todo.push_back({edge.child, next});
    }
  }
  // The states those tokens lead to: along each run, a step per plain byte, its tokens spread
  // over the first few (the successors only order what workers compute ahead).
  constexpr int kRunSteps = 8;
  for (auto [from, tokens] : runs.most_reached(kMaxSuccessors)) {
    const int steps = std::min(automaton_.plain_run(from), kRunSteps);
    for (int step = 0; step < steps; ++step) {
      from = automaton_.advance(from, static_cast<uint8_t>('a'));
      successors.add(from, std::max(1, tokens / steps));
    }
  }
  if (automaton_.accepts(state) || !any)
    for (int32_t id : end_tokens_) mask.allow(id);
  auto tokens = std::make_shared<StateTokens>();
  int64_t ends = 0;
  for (int32_t id : end_tokens_) ends += mask.allows(id) ? 1 : 0;
  tokens->only_end = ends > 0 && mask.count() == ends;
  tokens->mask = std::make_shared<const TokenMask>(std::move(mask));
  for (auto [state, count] : successors.most_reached(kMaxSuccessors)) {
    tokens->successors.push_back(state);
    tokens->successor_tokens.push_back(count);
  }
  return tokens;
}

}  // namespace drift::grammar
