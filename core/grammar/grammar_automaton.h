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
// Thread-safe: the engine thread and the mask workers (mask_workers.h) advance one automaton at
// once. A cached transition is one atomic read; a new one is computed under a lock and then
// published. States live in chunks that never move, so a state read needs no lock either.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
  // States one automaton may hold; a transition to a new one past this is kDead (a grammar that
  // needs millions of states near an output is hostile, and its memory stays bounded).
  static constexpr int32_t kMaxStates = 1 << 22;
  using TransitionRow = std::array<std::atomic<StateId>, 256>;  // by byte; -1: not computed yet

  StateId start() const { return start_; }
  StateId advance(StateId state, uint8_t byte);
  StateId advance(StateId state, std::string_view bytes);
  // Whether the bytes so far form a whole sentence of the grammar.
  bool accepts(StateId state) const { return at(state).accepting; }
  // Whether any byte can follow.
  bool can_continue(StateId state) const { return !at(state).stacks.empty(); }
  // The transitions out of `state` computed so far, or null when none is: a mask's walk reads
  // them for each trie node's edges without a call per byte (advance() computes a missing one).
  const TransitionRow* cached_transitions(StateId state) const {
    return at(state).next.load(std::memory_order_acquire);
  }
  // How many plain bytes (VocabularyTrie::is_plain) in a row the grammar takes from `state` with
  // every byte of that class alike (all of them to one state, never kDead), capped at
  // kMaxPlainRun: a JSON string's characters until its maxLength, a free-text loop without end.
  // A trie subtree of plain bytes no taller than this is allowed whole. Cached per state.
  int plain_run(StateId state);
  static constexpr int kMaxPlainRun = 255;
  // Whether `bytes` is a whole sentence.
  bool matches(std::string_view bytes) { return accepts(advance(start_, bytes)); }

  size_t num_states() const { return static_cast<size_t>(num_states_.load(std::memory_order_acquire)); }
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
  using Row = TransitionRow;
  // stacks and accepting are written once, before the state's id is published.
  struct State {
    std::vector<int32_t> stacks;  // sorted node ids, each at a Bytes element
    bool accepting = false;
    std::atomic<Row*> next{nullptr};     // made on the first transition computed, owned by rows_
    std::atomic<int16_t> plain_run{-1};  // -1: not found yet (racing threads store true lower bounds)
  };
  static constexpr int32_t kChunkBits = 12;
  static constexpr int32_t kChunkSize = 1 << kChunkBits;
  const State& at(StateId state) const { return state_slot(state); }
  State& state_slot(StateId state) const {
    return chunks_[state >> kChunkBits].load(std::memory_order_acquire)[state & (kChunkSize - 1)];
  }
  struct Closure {
    std::vector<int32_t> stacks;
    bool accepting = false;
  };

  int32_t intern_node(int32_t pos, int32_t parent);
  // Every stack reachable from position `pos` over `parent` without consuming a byte.
  void expand(int32_t pos, int32_t parent, Closure& out, std::unordered_set<uint64_t>& seen);
  StateId intern_state(Closure closure);
  StateId compute_transition(StateId state, uint8_t byte);
  // The state every plain byte takes `state` to, or kDead when they differ or leave the grammar.
  StateId plain_step(StateId state);

  Grammar grammar_;
  std::vector<Element> elements_;
  std::vector<std::vector<int32_t>> alternative_starts_;  // rule -> its alternatives' first elements
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  // Everything below the lock is touched only while holding it; chunks_ and each state's row are
  // published with release stores and read without it.
  std::mutex mutex_;
  std::array<std::atomic<State*>, kMaxStates / kChunkSize> chunks_{};
  std::vector<std::unique_ptr<State[]>> owned_chunks_;
  std::vector<std::unique_ptr<Row>> rows_;
  std::atomic<int32_t> num_states_{0};
  std::unordered_map<std::string, StateId> state_ids_;  // the sorted stacks + the accept flag, as bytes
  StateId start_ = kDead;
};

}  // namespace drift::grammar
