#include "core/grammar/grammar.h"

#include <fmt/format.h>

namespace drift::grammar {

int32_t GrammarBuilder::named(std::string_view name) {
  auto [it, inserted] = named_.try_emplace(std::string(name), static_cast<int32_t>(grammar_.rules.size()));
  if (!inserted) return it->second;
  grammar_.rule_names.emplace_back(name);
  grammar_.rules.emplace_back();
  defined_.push_back(false);
  return static_cast<int32_t>(grammar_.rules.size() - 1);
}

void GrammarBuilder::define(int32_t rule, std::vector<Sequence> alternatives) {
  if (defined_[rule]) throw GrammarError(fmt::format("rule '{}' is defined twice", grammar_.rule_names[rule]));
  grammar_.rules[rule] = std::move(alternatives);
  defined_[rule] = true;
}

int32_t GrammarBuilder::anonymous(std::vector<Sequence> alternatives, std::string_view hint) {
  const auto rule = static_cast<int32_t>(grammar_.rules.size());
  grammar_.rule_names.push_back(fmt::format("{}-{}", hint, rule));
  grammar_.rules.push_back(std::move(alternatives));
  defined_.push_back(true);
  return rule;
}

int32_t GrammarBuilder::embed(const Grammar& grammar, std::string_view prefix) {
  const auto base = static_cast<int32_t>(grammar_.rules.size());
  for (const std::string& name : grammar.rule_names) {
    grammar_.rule_names.push_back(fmt::format("{}{}", prefix, name));
    grammar_.rules.emplace_back();
    defined_.push_back(true);
  }
  for (size_t r = 0; r < grammar.rules.size(); ++r)
    for (const Sequence& alternative : grammar.rules[r]) {
      Sequence copy;
      for (Symbol s : alternative)
        copy.push_back(s.kind == Symbol::Kind::Rule ? ref(base + s.index) : bytes(grammar.byte_sets[s.index]));
      grammar_.rules[base + r].push_back(std::move(copy));
    }
  return base + grammar.root;
}

Symbol GrammarBuilder::bytes(const ByteSet& wanted) {
  ByteSet set = wanted;
  for (size_t w = 0; w < set.words.size(); ++w) set.words[w] &= ~excluded_.words[w];
  for (size_t i = 0; i < grammar_.byte_sets.size(); ++i)
    if (grammar_.byte_sets[i] == set) return {Symbol::Kind::Bytes, static_cast<int32_t>(i)};
  grammar_.byte_sets.push_back(set);
  return {Symbol::Kind::Bytes, static_cast<int32_t>(grammar_.byte_sets.size() - 1)};
}

Sequence GrammarBuilder::literal(std::string_view text) {
  Sequence out;
  for (char c : text) {
    ByteSet set;
    set.add(static_cast<uint8_t>(c));
    out.push_back(bytes(set));
  }
  return out;
}

Symbol GrammarBuilder::characters(const std::vector<CodePointRange>& ranges, bool negated, std::string_view hint) {
  const auto sequences = utf8_sequences(negated ? complement(ranges) : ranges);
  // The one-byte sequences share one byte set: an ASCII class stays a single terminal.
  ByteSet ascii;
  bool any_ascii = false;
  std::vector<Sequence> alternatives;
  for (const auto& seq : sequences) {
    if (seq.size() == 1) {
      ascii.add_range(seq[0].first, seq[0].last);
      any_ascii = true;
      continue;
    }
    Sequence alt;
    for (ByteRange r : seq) {
      ByteSet set;
      set.add_range(r.first, r.last);
      alt.push_back(bytes(set));
    }
    alternatives.push_back(std::move(alt));
  }
  if (any_ascii && alternatives.empty()) return bytes(ascii);
  if (any_ascii) alternatives.insert(alternatives.begin(), Sequence{bytes(ascii)});
  if (alternatives.empty()) throw GrammarError(fmt::format("{}: the character class matches no character", hint));
  return choice(std::move(alternatives), hint);
}

Symbol GrammarBuilder::repeat(const Sequence& item, int64_t min, std::optional<int64_t> max, std::string_view hint) {
  if (min < 0 || (max && *max < min))
    throw GrammarError(fmt::format("{}: bad repetition {{{},{}}}", hint, min, max ? std::to_string(*max) : ""));
  // The optional tail: item (item (item ...)?)? for a bound, tail ::= item tail | "" without.
  Sequence tail;
  if (!max) {
    const int32_t rule = anonymous({}, hint);
    Sequence again = item;
    again.push_back(ref(rule));
    grammar_.rules[rule] = {again, {}};
    tail = {ref(rule)};
  } else {
    for (int64_t i = min; i < *max; ++i) {
      Sequence more = item;
      more.insert(more.end(), tail.begin(), tail.end());
      tail = {ref(anonymous({more, {}}, hint))};
    }
  }
  Sequence all;
  for (int64_t i = 0; i < min; ++i) all.insert(all.end(), item.begin(), item.end());
  all.insert(all.end(), tail.begin(), tail.end());
  return ref(anonymous({all}, hint));
}

namespace {

// Rules that can match the empty string, to a fixed point.
std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Sequence& alt : g.rules[r]) {
        bool all = true;
        for (Symbol s : alt) all = all && s.kind == Symbol::Kind::Rule && nullable[s.index];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// Rules that can match some string at all.
std::vector<bool> productive_rules(const Grammar& g) {
  std::vector<bool> productive(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (productive[r]) continue;
      for (const Sequence& alt : g.rules[r]) {
        bool all = true;
        for (Symbol s : alt) all = all && (s.kind == Symbol::Kind::Bytes || productive[s.index]);
        if (all) {
          productive[r] = changed = true;
          break;
        }
      }
    }
  }
  return productive;
}

// A rule that can reach itself without consuming a byte, if any (iterative: a grammar may chain
// thousands of rules).
std::optional<int32_t> left_recursive_rule(const Grammar& g) {
  const std::vector<bool> nullable = nullable_rules(g);
  std::vector<std::vector<int32_t>> left;  // rule -> rules that can start it
  left.resize(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r)
    for (const Sequence& alt : g.rules[r])
      for (Symbol s : alt) {
        if (s.kind == Symbol::Kind::Bytes) break;
        left[r].push_back(s.index);
        if (!nullable[s.index]) break;
      }
  enum Mark : uint8_t { Unseen, Open, Done };
  std::vector<Mark> mark(g.rules.size(), Unseen);
  std::vector<std::pair<int32_t, size_t>> path;  // (rule, next of its left corners to visit)
  for (size_t start = 0; start < g.rules.size(); ++start) {
    if (mark[start] != Unseen) continue;
    path.push_back({static_cast<int32_t>(start), 0});
    mark[start] = Open;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next == left[rule].size()) {
        mark[rule] = Done;
        path.pop_back();
        continue;
      }
      const int32_t to = left[rule][next++];
      if (mark[to] == Open) return to;
      if (mark[to] == Unseen) {
        mark[to] = Open;
        path.push_back({to, 0});
      }
    }
  }
  return std::nullopt;
}

}  // namespace

Grammar GrammarBuilder::build(int32_t root) && {
  for (size_t r = 0; r < defined_.size(); ++r)
    if (!defined_[r]) throw GrammarError(fmt::format("rule '{}' is used but never defined", grammar_.rule_names[r]));
  if (auto rule = left_recursive_rule(grammar_))
    throw GrammarError(fmt::format("rule '{}' is left-recursive (it can reach itself before matching a character)",
                                   grammar_.rule_names[*rule]));
  if (!productive_rules(grammar_)[root])
    throw GrammarError(fmt::format("rule '{}' matches no string", grammar_.rule_names[root]));
  grammar_.root = root;
  return std::move(grammar_);
}

std::string to_gbnf(const Grammar& grammar) {
  auto byte_set = [](const ByteSet& set) {
    std::string out = "[";
    for (int b = 0; b < 256; ++b) {
      if (!set.has(static_cast<uint8_t>(b))) continue;
      int e = b;
      while (e + 1 < 256 && set.has(static_cast<uint8_t>(e + 1))) ++e;
      out += fmt::format("\\x{:02X}", b);
      if (e > b) out += fmt::format("-\\x{:02X}", e);
      b = e;
    }
    return out + "]";
  };
  std::string out;
  for (size_t r = 0; r < grammar.rules.size(); ++r) {
    out += grammar.rule_names[r] + " ::=";
    for (size_t a = 0; a < grammar.rules[r].size(); ++a) {
      if (a > 0) out += " |";
      if (grammar.rules[r][a].empty()) out += " \"\"";
      for (Symbol s : grammar.rules[r][a])
        out +=
            " " + (s.kind == Symbol::Kind::Bytes ? byte_set(grammar.byte_sets[s.index]) : grammar.rule_names[s.index]);
    }
    out += "\n";
  }
  return out;
}

}  // namespace drift::grammar
