#pragma once
// Grammar: a context-free grammar over bytes, what every structured-output format compiles to
// (JSON Schema, json_object, GBNF, regex, a choice). Terminals are byte sets (a code-point class
// is spelled out as its UTF-8 byte sequences: utf8_ranges.h), so the automaton that runs it
// (grammar_automaton.h) consumes token bytes directly, whole characters or not.
//
// GrammarBuilder makes one: named rules (GBNF's), anonymous ones for groups and repetitions, and
// a check on build() that every rule is defined, reachable rules are not left-recursive (the
// automaton expands rules top-down) and the root can produce something.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/grammar/utf8_ranges.h"

namespace drift::grammar {

struct ByteSet {
  std::array<uint64_t, 4> words{};
  bool has(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t first, uint8_t last) {
    for (unsigned b = first; b <= last; ++b) add(static_cast<uint8_t>(b));
  }
  bool operator==(const ByteSet&) const = default;
};

struct Symbol {
  enum class Kind : uint8_t { Bytes, Rule };
  Kind kind = Kind::Bytes;
  int32_t index = 0;  // into Grammar::byte_sets or Grammar::rules
};
using Sequence = std::vector<Symbol>;

struct Grammar {
  std::vector<ByteSet> byte_sets;
  std::vector<std::string> rule_names;       // anonymous rules get a name from their parent
  std::vector<std::vector<Sequence>> rules;  // rule -> alternatives
  int32_t root = 0;
};

class GrammarBuilder {
 public:
  // A named rule, declared on first use so rules can refer to ones defined later.
  int32_t named(std::string_view name);
  void define(int32_t rule, std::vector<Sequence> alternatives);
  bool defined(int32_t rule) const { return defined_[rule]; }
  // A new rule holding `alternatives`; `hint` names it in errors and dumps.
  int32_t anonymous(std::vector<Sequence> alternatives, std::string_view hint);

  static Symbol ref(int32_t rule) { return {Symbol::Kind::Rule, rule}; }
  Symbol bytes(const ByteSet& set);
  // Bytes every later byte set leaves out (until reset with an empty set): a JSON string's
  // pattern must never produce a raw quote, backslash or control character.
  void exclude_bytes(const ByteSet& set) { excluded_ = set; }
  // The UTF-8 bytes of `text`, one symbol each.
  Sequence literal(std::string_view text);
  // One character of the class (negated: any character outside it).
  Symbol characters(const std::vector<CodePointRange>& ranges, bool negated, std::string_view hint);
  // `item` repeated min to max times (no max: unbounded), as right-recursive rules.
  Symbol repeat(const Sequence& item, int64_t min, std::optional<int64_t> max, std::string_view hint);
  Symbol optional(const Sequence& item, std::string_view hint) { return repeat(item, 0, 1, hint); }
  Symbol choice(std::vector<Sequence> alternatives, std::string_view hint) {
    return ref(anonymous(std::move(alternatives), hint));
  }
  // Copies every rule of a built grammar into this one (names prefixed with `prefix`) and
  // returns its root rule here: grammars compose (a tool call's arguments are its function's
  // JSON-schema grammar). Call it with no bytes excluded.
  int32_t embed(const Grammar& grammar, std::string_view prefix);

  // Throws GrammarError naming the first undefined rule, a left-recursive rule, or a root that
  // matches nothing.
  Grammar build(int32_t root) &&;

 private:
  Grammar grammar_;
  std::vector<bool> defined_;
  std::unordered_map<std::string, int32_t> named_;  // named rules only: an anonymous one never answers a name
  ByteSet excluded_;
};

// Why a grammar (or the schema, regex or GBNF text it came from) cannot be compiled.
struct GrammarError : DriftError {
  using DriftError::DriftError;
};

// The grammar in GBNF notation (byte sets as [\xNN-\xNN]): for errors, tests and debugging.
std::string to_gbnf(const Grammar& grammar);

}  // namespace drift::grammar
