#pragma once
// The regex front end's parser: a pattern (the syntax regex_grammar.h lists) into a tree of
// character classes, concatenations, alternations and repetitions. regex_grammar turns the tree
// into grammar rules.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/grammar/utf8_ranges.h"

namespace drift::grammar::regex {

// The parsed regex. A literal is a one-code-point class. `nullable` (matches "") is kept on each
// node because translating an unbounded repetition asks it of every level below.
struct Node {
  enum class Kind : uint8_t { Empty, Chars, Concat, Alt, Repeat };
  Kind kind = Kind::Empty;
  bool nullable = true;
  std::vector<CodePointRange> ranges;  // Chars: normalized, never empty
  std::vector<Node> children;          // Concat, Alt: the items; Repeat: the repeated one
  int64_t min = 0;                     // Repeat
  std::optional<int64_t> max;          // Repeat: none is unbounded
};

// Throws GrammarError "regex at <byte offset>: <problem>" for what the syntax does not allow.
Node parse(std::string_view pattern);

}  // namespace drift::grammar::regex
