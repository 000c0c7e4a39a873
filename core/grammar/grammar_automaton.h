#pragma once
// GrammarAutomaton: a Grammar run as a pushdown automaton over bytes, determinized lazily.
//
// A parse position is a stack of grammar positions (the top one at a byte set, the ones below
// where to continue when each rule ends), interned as linked nodes so stacks share their tails
// and compare as one integer. A *state* is the set of every stack the bytes so far allow (the
// grammar may be ambiguous) plus whether the grammar could end here; states are interned too,
// and each (state, byte) transition is computed once and cached -- after warm-up, advancing by
// a token is a few array reads per byte, and a state's token mask can be cached by its number.
// Calls on a rule's last symbol do not push a return (tail calls), so right recursion such as a
// string's character loop keeps the stacks bounded.
//
// Not thread-safe: the engine thread owns each automaton.
#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/grammar/grammar.h"

namespace drift::grammar {

using StateId = int32_t;

class GrammarAutomaton {
 public:
  explicit GrammarAutomaton(Grammar grammar);

  static constexpr StateId kDead = 0;  // no stack left: the bytes left the grammar
  // Parse stacks one state may hold; a transition to more is kDead (see advance).
  static constexpr size_t kMaxStacks = 1024;
  StateId start() const { return start_; }
  StateId advance(StateId state, uint8_t byte);
  StateId advance(StateId state, std::string_view bytes);
  // Whether the bytes so far form a whole sentence of the grammar.
  bool accepts(StateId state) const { return states_[state].accepting; }
  // Whether any byte can follow.
  bool can_continue(StateId state) const { return !states_[state].stacks.empty(); }
  // Whether `bytes` is a whole sentence.
  bool matches(std::string_view bytes) { return accepts(advance(start_, bytes)); }

  size_t num_states() const { return states_.size(); }
  const Grammar& grammar() const { return grammar_; }

 private:
  // Grammar symbols flattened: each alternative's symbols, then an End marker.
  struct Element {
    enum class Kind : uint8_t { Bytes, Rule, End } kind;
    int32_t index;  // byte set or rule
  };
  struct Node {  // a stack: position `pos`, continuing with stack `parent` (-1: the bottom)
    int32_t pos, parent;
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted node ids, each at a Bytes element
    bool accepting = false;
  };
  struct Closure {
    std::vector<int32_t> stacks;
    bool accepting = false;
  };

  int32_t intern_node(int32_t pos, int32_t parent);
  // Every stack reachable from position `pos` over `parent` without consuming a byte.
  void expand(int32_t pos, int32_t parent, Closure& out, std::unordered_set<uint64_t>& seen);
  StateId intern_state(Closure closure);

  Grammar grammar_;
  std::vector<Element> elements_;
  std::vector<std::vector<int32_t>> alternative_starts_;  // rule -> its alternatives' first elements
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<State> states_;
  std::unordered_map<std::string, StateId> state_ids_;                  // the sorted stacks + the accept flag, as bytes
  std::vector<std::unique_ptr<std::array<StateId, 256>>> transitions_;  // -1: not computed yet
  StateId start_ = kDead;
};

}  // namespace drift::grammar
