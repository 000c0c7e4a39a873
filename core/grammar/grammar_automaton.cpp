#include "core/grammar/grammar_automaton.h"

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

StateId GrammarAutomaton::intern_state(Closure closure) {
  std::sort(closure.stacks.begin(), closure.stacks.end());
  closure.stacks.erase(std::unique(closure.stacks.begin(), closure.stacks.end()), closure.stacks.end());
  std::string key(reinterpret_cast<const char*>(closure.stacks.data()), closure.stacks.size() * sizeof(int32_t));
  key.push_back(closure.accepting ? '\1' : '\0');
  auto [it, inserted] = state_ids_.try_emplace(std::move(key), static_cast<StateId>(states_.size()));
  if (inserted) {
    states_.push_back({std::move(closure.stacks), closure.accepting});
    transitions_.push_back(nullptr);
  }
  return it->second;
}

StateId GrammarAutomaton::advance(StateId state, uint8_t byte) {
  if (state == kDead) return kDead;
  auto& row = transitions_[state];
  if (row && (*row)[byte] >= 0) return (*row)[byte];
  Closure next;
  std::unordered_set<uint64_t> seen;
  for (int32_t stack : states_[state].stacks) {  // states_ may grow below: copy what is read
    const Node node = nodes_[stack];
    if (!grammar_.byte_sets[elements_[node.pos].index].has(byte)) continue;
    expand(node.pos + 1, node.parent, next, seen);
  }
  // A grammar ambiguous enough to hold this many parses at once (((x?){100}){100}) would make
  // every later byte and mask cost that much: the parse ends here instead (kDead), which ends a
  // request's output. JSON schemas, regexes and grammars written for output stay far below.
  const StateId result = next.stacks.size() > kMaxStacks ? kDead : intern_state(std::move(next));
  auto& cached = transitions_[state];  // reallocation-safe: the row is a unique_ptr
  if (!cached) {
    cached = std::make_unique<std::array<StateId, 256>>();
    cached->fill(-1);
  }
  (*cached)[byte] = result;
  return result;
}

StateId GrammarAutomaton::advance(StateId state, std::string_view bytes) {
  for (char c : bytes) {
    state = advance(state, static_cast<uint8_t>(c));
    if (state == kDead) break;
  }
  return state;
}

}  // namespace drift::grammar
