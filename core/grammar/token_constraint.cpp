#include "core/grammar/token_constraint.h"

#include <algorithm>

namespace drift::grammar {
namespace {

// Masks cached per constraint; past this many, the cache starts over (a mask in use stays alive
// through its shared_ptr). 4096 masks of a 128K vocabulary take 64 MiB.
constexpr size_t kMaxCachedMasks = 4096;

}  // namespace

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

const TokenConstraint::StateTokens& TokenConstraint::state_tokens(StateId state) {
  if (auto it = masks_.find(state); it != masks_.end()) return it->second;
  if (masks_.size() >= kMaxCachedMasks) masks_.clear();
  auto computed = std::make_shared<const TokenMask>(compute_mask(state));
  int64_t ends = 0;
  for (int32_t id : end_tokens_) ends += computed->allows(id) ? 1 : 0;
  const bool only_end = ends > 0 && computed->count() == ends;
  return masks_.emplace(state, StateTokens{std::move(computed), only_end}).first->second;
}

std::shared_ptr<const TokenMask> TokenConstraint::mask(StateId state) { return state_tokens(state).mask; }

bool TokenConstraint::must_end(StateId state) { return state_tokens(state).only_end; }

TokenMask TokenConstraint::compute_mask(StateId state) {
  TokenMask mask;
  mask.words.assign((static_cast<size_t>(vocabulary_->vocab_size()) + 31) / 32, 0);
  const VocabularyTrie& trie = *vocabulary_;
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
    for (int32_t e = node.first_edge; e < node.first_edge + node.num_edges; ++e) {
      const VocabularyTrie::Edge edge = trie.edge(e);
      const StateId next = automaton_.advance(at.state, edge.byte);
      if (next == GrammarAutomaton::kDead) continue;
      const VocabularyTrie::Node& child = trie.node(edge.child);
      for (int32_t t = child.first_token; t < child.first_token + child.num_tokens; ++t) {
        mask.allow(trie.token(t));
        any = true;
      }
      if (child.num_edges > 0) todo.push_back({edge.child, next});
    }
  }
  if (automaton_.accepts(state) || !any)
    for (int32_t id : end_tokens_) mask.allow(id);
  return mask;
}

}  // namespace drift::grammar
