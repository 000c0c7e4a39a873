#include "core/grammar/grammar_automaton.h"

#include "core/grammar/vocabulary_trie.h"

#include <algorithm>
#include <unordered_set>

namespace drift::grammar {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

GrammarAutomaton::GrammarAutomaton(Grammar grammar) : grammar_(std::move(grammar)) {
  alternative_starts_.resize(grammar_.rules.size());
  for (size_t r = 0; r < grammar_.rules.size(); ++r)
    for (const Sequence& alt : grammar_.rules[r]) {
      alternative_starts_[r].push_back(static_cast<int32_t>(elements_.size()));
      for (Symbol s : alt)
        elements_.push_back({s.kind == Symbol::Kind::Bytes ? Element::Kind::Bytes : Element::Kind::Rule, s.index});
      elements_.push_back({Element::Kind::End, -1});
    }
  intern_state({});  // kDead
  Closure root;
  std::unordered_set<uint64_t> seen;
  for (int32_t first : alternative_starts_[grammar_.root]) expand(first, -1, root, seen);
  start_ = intern_state(std::move(root));
}

int32_t GrammarAutomaton::intern_node(int32_t pos, int32_t parent) {
  auto [it, inserted] = node_ids_.try_emplace(pair_key(pos, parent), static_cast<int32_t>(nodes_.size()));
  if (inserted) nodes_.push_back({pos, parent});
  return it->second;
}

void GrammarAutomaton::expand(int32_t pos, int32_t parent, Closure& out, std::unordered_set<uint64_t>& seen) {
  // A worklist, not recursion: a grammar may chain thousands of rules. `seen` keeps a nullable
  // cycle finite (build() rejects left recursion; this guards any other epsilon loop).
  std::vector<std::pair<int32_t, int32_t>> todo{{pos, parent}};
  while (!todo.empty()) {
    const auto [at, under] = todo.back();
    todo.pop_back();
    if (!seen.insert(pair_key(at, under)).second) continue;
    const Element& e = elements_[at];
    switch (e.kind) {
      case Element::Kind::Bytes:
        out.stacks.push_back(intern_node(at, under));
        break;
      case Element::Kind::End:
        if (under < 0)
          out.accepting = true;
        else
          todo.emplace_back(nodes_[under].pos, nodes_[under].parent);
        break;
      case Element::Kind::Rule: {
        // The return position; a call in tail position returns straight to the caller's parent.
        const int32_t next = at + 1;
        const int32_t ret = elements_[next].kind == Element::Kind::End ? under : intern_node(next, under);
        for (int32_t first : alternative_starts_[e.index]) todo.emplace_back(first, ret);
        break;
      }
    }
  }
}

// Under the lock. A new state is written whole before its id can be read anywhere: ids leave
// only through a transition's release store (or start_, set before any reader exists).
StateId GrammarAutomaton::intern_state(Closure closure) {
  std::sort(closure.stacks.begin(), closure.stacks.end());
  closure.stacks.erase(std::unique(closure.stacks.begin(), closure.stacks.end()), closure.stacks.end());
  std::string key(reinterpret_cast<const char*>(closure.stacks.data()), closure.stacks.size() * sizeof(int32_t));
  key.push_back(closure.accepting ? '\1' : '\0');
  if (auto it = state_ids_.find(key); it != state_ids_.end()) return it->second;
  const int32_t id = num_states_.load(std::memory_order_relaxed);
  if (id >= kMaxStates) return kDead;
  if ((id & (kChunkSize - 1)) == 0) {
    owned_chunks_.push_back(std::make_unique<State[]>(kChunkSize));
    chunks_[id >> kChunkBits].store(owned_chunks_.back().get(), std::memory_order_release);
  }
  State& state = state_slot(id);
  state.stacks = std::move(closure.stacks);
  state.accepting = closure.accepting;
  state_ids_.emplace(std::move(key), id);
  num_states_.store(id + 1, std::memory_order_release);
  return id;
}

StateId GrammarAutomaton::advance(StateId state, uint8_t byte) {
  if (state == kDead) return kDead;
  if (const Row* row = at(state).next.load(std::memory_order_acquire)) {
    const StateId cached = (*row)[byte].load(std::memory_order_acquire);
    if (cached >= 0) return cached;
  }
  return compute_transition(state, byte);
}

StateId GrammarAutomaton::compute_transition(StateId state, uint8_t byte) {
  std::lock_guard lock(mutex_);
  State& from = state_slot(state);
  Row* row = from.next.load(std::memory_order_relaxed);
  if (row) {
    const StateId cached = (*row)[byte].load(std::memory_order_relaxed);
    if (cached >= 0) return cached;  // another thread computed it meanwhile
  }
  Closure next;
  std::unordered_set<uint64_t> seen;
  for (int32_t stack : from.stacks) {
    const Node node = nodes_[stack];  // nodes_ may grow below: copy what is read
    if (!grammar_.byte_sets[elements_[node.pos].index].has(byte)) continue;
    expand(node.pos + 1, node.parent, next, seen);
  }
  // A grammar ambiguous enough to hold this many parses at once (((x?){100}){100}) would make
  // every later byte and mask cost that much: the parse ends here instead (kDead), which ends a
  // request's output. JSON schemas, regexes and grammars written for output stay far below.
  const StateId result = next.stacks.size() > kMaxStacks ? kDead : intern_state(std::move(next));
  if (!row) {
    rows_.push_back(std::make_unique<Row>());
    row = rows_.back().get();
    for (auto& entry : *row) entry.store(-1, std::memory_order_relaxed);
    from.next.store(row, std::memory_order_release);
  }
  (*row)[byte].store(result, std::memory_order_release);
  return result;
}

StateId GrammarAutomaton::plain_step(StateId state) {
  const StateId to = advance(state, static_cast<uint8_t>(' '));
  if (to == kDead) return kDead;
  for (unsigned b = 0x21; b <= 0x7E; ++b)
    if (VocabularyTrie::is_plain(static_cast<uint8_t>(b)) && advance(state, static_cast<uint8_t>(b)) != to)
      return kDead;
  return to;
}

int GrammarAutomaton::plain_run(StateId state) {
  if (state == kDead) return 0;
  // Follows the plain steps until a state that takes none, one already known, or one seen on
  // this chain (a loop: unbounded), then fills the chain in backwards. A chain longer than the
  // cap stops early and says 0 for its last state: less than the truth, so nothing is claimed
  // that does not hold (that state's mask then walks).
  std::vector<StateId> chain;
  int last = 0;  // chain.back()'s run
  for (StateId s = state;;) {
    if (const int16_t known = at(s).plain_run.load(std::memory_order_relaxed); known >= 0) {
      if (chain.empty()) return known;
      last = std::min(kMaxPlainRun, known + 1);
      break;
    }
    if (std::find(chain.begin(), chain.end(), s) != chain.end()) {
      last = kMaxPlainRun;
      break;
    }
    if (chain.size() == static_cast<size_t>(kMaxPlainRun)) break;
    chain.push_back(s);
    s = plain_step(s);
    if (s == kDead) break;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    state_slot(*it).plain_run.store(static_cast<int16_t>(last), std::memory_order_relaxed);
    last = std::min(kMaxPlainRun, last + 1);
  }
  return at(state).plain_run.load(std::memory_order_relaxed);
}

StateId GrammarAutomaton::advance(StateId state, std::string_view bytes) {
  for (char c : bytes) {
    state = advance(state, static_cast<uint8_t>(c));
    if (state == kDead) break;
  }
  return state;
}

}  // namespace drift::grammar
