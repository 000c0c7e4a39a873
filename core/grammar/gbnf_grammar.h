#pragma once
// GBNF, llama.cpp's grammar notation (llama.cpp's `grammar` field, vLLM's `guided_grammar`),
// compiled to a Grammar. The notation, as llama.cpp's parser reads it:
//
//   root  ::= "[" ws (item ("," ws item)*)? "]"   # rules; the start rule is `root`
//   item  ::= [a-zA-Z_] [a-zA-Z0-9_]{0,15} | num  # classes, alternation, {m,n}
//   num   ::= "-"? [0-9]+ ("." [0-9]+)?           # ? * + and groups
//   ws    ::= | " " | "\n"                        # an empty alternative
//
// A rule ends at a newline outside parentheses, except that a newline right after `::=` or `|`
// continues it. Literals and classes take the escapes \n \r \t \\ \" \[ \] \- and \xHH \uHHHH
// \UHHHHHHHH (code points, so "\xE9" is U+00E9, two UTF-8 bytes); `.` is any character.
// Where this reading differs from llama.cpp's (see gbnf_grammar.cpp): names may hold `_` (as
// llama.cpp's README says, though its parser refuses one), `{,n}` is `{0,n}`, a rule defined twice
// and a reversed range are errors, counts past 10000 are refused, and tokens (`<think>`, `<[42]>`,
// `!<...>`) are not supported: a Grammar matches bytes, not a vocabulary's tokens.
#include <string_view>

#include "core/grammar/grammar.h"

namespace drift::grammar {

// Limits that bound what a request's grammar can cost to build: the largest m or n in {m,n}; the
// most copies all repetitions of one grammar may expand to; the deepest nesting of groups and
// repetitions (each level is a recursion here and in the compiler).
inline constexpr int64_t kMaxGbnfRepetition = 10000;
inline constexpr int64_t kMaxGbnfExpansion = 100000;
inline constexpr int kMaxGbnfNesting = 256;

// Parses GBNF text whose start rule is `root`. Throws GrammarError naming line:column (1-based,
// columns in characters) and the problem, e.g. "grammar 3:14: unterminated string"; checks on the
// whole grammar (left recursion, a root matching nothing) read "grammar: ...".
Grammar gbnf_grammar(std::string_view text);

}  // namespace drift::grammar
