#pragma once
// The regex front end: a regular expression (vLLM's guided_regex, a JSON Schema "pattern") as
// grammar rules. Matching is always full -- the whole output must match, as if the pattern were
// anchored at both ends -- so ^ at the very start and $ at the very end are accepted and ignored.
//
// The syntax is the common subset of Python's re and ECMAScript: literals (UTF-8), '.', classes
// [...] and [^...], \d \w \s and their negations (ASCII meanings), \n \t \r \f \v \a \0, \xHH,
// \x{H..}, \uHHHH (a surrogate pair \uD83D\uDE00 is one character), \u{H..}, escaped punctuation,
// groups (...), (?:...), (?P<name>...) and (?<name>...) (all plain groups), '|' (empty
// alternatives allowed), and * + ? {n} {n,} {n,m} {,m} with their lazy forms (the same language).
// Everything that is not a regular language or depends on the match position -- backreferences,
// lookarounds, \b, atomic groups, possessive quantifiers, inline flags -- is an error.
#include <string_view>

#include "core/grammar/grammar.h"

namespace drift::grammar {

// Repetition counts ({n,m}) above this are rejected: each count is a grammar rule.
inline constexpr int64_t kMaxRegexRepeat = 10000;

// Appends the rules for `pattern` to `builder` (named after `hint`) and returns a symbol matching
// exactly the strings the regex matches in full. Throws GrammarError naming the byte offset and the
// problem, e.g. "regex at 4: backreferences are not supported"; `builder` is untouched then.
Symbol regex_symbol(GrammarBuilder& builder, std::string_view pattern, std::string_view hint);

// A whole grammar for a regex (its root matches what the regex matches in full).
Grammar regex_grammar(std::string_view pattern);

}  // namespace drift::grammar
