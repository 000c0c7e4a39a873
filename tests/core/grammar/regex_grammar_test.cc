// The regex front end against PCRE2 as the reference: for each pattern, many strings -- random
// ones over the pattern's own characters plus a few others, random walks through the compiled
// automaton (strings the grammar is about to accept), and mutations of both -- must get the same
// full-match answer from the grammar and from PCRE2. Unsupported syntax must fail with a message
// saying what is not supported and where.
#include "core/grammar/regex_grammar.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/grammar/grammar_automaton.h"

namespace drift::grammar {
namespace {

// PCRE2's answer to "does the whole UTF-8 subject match": anchored at both ends, newline = LF (so
// '.' is any character but \n). A subject that is not valid UTF-8 matches nothing.
class Pcre {
 public:
  explicit Pcre(const std::string& pattern) {
    pcre2_compile_context* context = pcre2_compile_context_create(nullptr);
    pcre2_set_newline(context, PCRE2_NEWLINE_LF);
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error, &offset, context);
    pcre2_compile_context_free(context);
    if (code_ == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      ADD_FAILURE() << "PCRE2 rejects '" << pattern << "' at " << offset << ": " << message;
      return;
    }
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre() {
    pcre2_match_context_free(match_context_);
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  Pcre(const Pcre&) = delete;
  Pcre& operator=(const Pcre&) = delete;

  bool full_match(const std::string& subject) {
    if (code_ == nullptr) return false;
    const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
    int rc = pcre2_match(code_, bytes, subject.size(), 0, 0, data_, match_context_);
    // Backtracking can blow up (((a)*)*b?)* on a long miss; the DFA matcher answers without it.
    // It reports its longest match, which must end at the end (it ignores PCRE2_ENDANCHORED).
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) {
      rc = pcre2_dfa_match(code_, bytes, subject.size(), 0, 0, data_, nullptr, workspace_.data(), workspace_.size());
      if (rc >= 0 && pcre2_get_ovector_pointer(data_)[1] != subject.size()) rc = PCRE2_ERROR_NOMATCH;
    }
    // No match, or a subject that is not UTF-8; any other error would make the answer moot.
    EXPECT_TRUE(rc >= 0 || rc == PCRE2_ERROR_NOMATCH || (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
        << "PCRE2 returned " << rc;
    return rc >= 0;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
  pcre2_match_context* match_context_ = make_match_context();
  std::vector<int> workspace_ = std::vector<int>(100000);

  // A low backtracking limit: a blow-up falls back to the DFA matcher at once.
  static pcre2_match_context* make_match_context() {
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(context, 10000);
    return context;
  }
};

// A string with its bytes visible, for failure messages.
std::string shown(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out + "\"";
}

struct Case {
  std::string regex;
  std::string pcre;  // the same regex in PCRE2 syntax, where it differs (\u, \v, {,m}); empty: the same
  std::vector<std::string> examples;  // strings that match: seeds for mutations
};

// 59 patterns over the supported syntax.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"", "", {""}},
      {"abc", "", {"abc"}},
      {"a|b|c", "", {"a", "c"}},
      {"a*", "", {"", "aaa"}},
      {"a+b*", "", {"a", "aabb"}},
      {"(ab)*c?", "", {"", "ababc"}},
      {"(a*)*", "", {"", "aaaa"}},
      {"(a*)+b", "", {"b", "aab"}},
      {"(a|b*)+", "", {"", "abba"}},
      {"(a?b?)*c", "", {"c", "abbac"}},
      {"(((a)*)*b?)*", "", {"", "abab"}},
      {"(a+|b)*", "", {"", "aabab"}},
      {"(ab|c?)*d", "", {"d", "abccabd"}},
      {"(a{2}|b?|(cd)*)*", "", {"", "aabcdcdb"}},
      {"(a+)+b", "", {"ab", "aaab"}},
      {"(|a|bc)", "", {"", "bc"}},
      {"a|", "", {"", "a"}},
      {"()a()", "", {"a"}},
      {"()*x", "", {"x"}},
      {"x(?:ab|cd){2,3}y", "", {"xabcdy", "xcdcdaby"}},
      {"a{3}", "", {"aaa"}},
      {"a{2,}", "", {"aa", "aaaaa"}},
      {"a{0,3}b{1,2}", "", {"b", "aaabb"}},
      {"a{,2}b", "a{0,2}b", {"b", "aab"}},  // Python's {,m}; PCRE2 10.42 reads it as a literal
      {"(a{1,2}){2}", "", {"aa", "aaaa"}},
      {"((a{0,2}){0,2}b?){1,3}", "", {"", "aab", "abaab"}},
      {"(a?b?){2,3}c", "", {"c", "ababc", "bac"}},
      {"((a*){2}(b|c?)){0,2}d", "", {"d", "aabacd"}},
      {"((a|b?)(c*|d)){0,2}x", "", {"x", "bccdx"}},
      {"(a*?b+?)??c*?", "", {"", "abc", "bbcc"}},
      {"a{2,3}?b|c+?d", "", {"aab", "cd"}},
      {"[a-c]+", "", {"abc"}},
      {"[^a-c]*", "", {"xyz", "é"}},
      {"[-a]|[a-]b|[]a]c", "", {"-", "-b", "]c"}},
      {"[%--]+|[a\\-z]", "", {"%-", "-"}},
      {"\\d{2,4}-\\w+", "", {"12-ab_9", "2024-x"}},
      {"\\D\\W\\S", "", {"a-b", "é é"}},
      {"[\\d\\s]+|[^\\w]", "", {"1 2\n", "-"}},
      {"[\\D][\\W_][^\\S\\n]", "", {"x_ ", "a-\t"}},
      {"[\\s\\S]|[^\\n]{2}", "", {"\n", "ab"}},
      {".", "", {"a", "é", "😀"}},
      {"a.?b", "", {"ab", "a中b"}},
      {"é+|中文|😀", "", {"éé", "中文", "😀"}},
      {"[à-ÿ]+[α-ω0-9]*", "", {"àÿ", "éβ9"}},
      {"[^é]", "", {"e", "中"}},
      {"[😀-😂]|\\u00e9", "[😀-😂]|\\x{e9}", {"😁", "é"}},
      {"\\u{1F600}|\\uD83D\\uDE01|\\x41|\\x{42}", "\\x{1F600}|\\x{1F601}|\\x41|\\x{42}", {"😀", "😁", "A", "B"}},
      {"[\\x41-\\x43\\u00e0-\\u00e2]+", "[\\x41-\\x43\\x{e0}-\\x{e2}]+", {"ABà", "â"}},
      {"\\n\\t\\r\\f\\v\\0|\\a", "\\n\\t\\r\\f\\x0B\\x00|\\x07", {std::string("\n\t\r\f\v\0", 6), "\a"}},
      {"[\\n\\t\\v\\b]+", "[\\n\\t\\x0B\\x08]+", {"\n\v", "\b"}},
      {"\\.\\\\\\/\\-\\[\\]\\(\\)\\{\\}\\*\\+\\?\\|\\^\\$", "", {".\\/-[](){}*+?|^$"}},
      {"^(?P<year>\\d{4})-(?<month>\\d\\d)$", "", {"2024-01"}},
      {"^$", "", {""}},
      {"^(a|b)$", "", {"a"}},
      {"a{|x{a}|}{", "", {"a{", "x{a}", "}{"}},
      {"((a|b)(c|)){1,3}d*", "", {"a", "bcacd"}},
      {"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$", "", {"a.b@c-d.org"}},
      {"^\\+?[1-9]\\d{1,14}$", "", {"+491234", "12"}},
      {"(\\d+\\.)*\\d+", "", {"1", "1.22.3"}},
  };
  return all;
}

// The pattern's own characters, plus a few others: the \s characters, NUL, DEL, non-ASCII of each length.
std::vector<std::string> alphabet(const std::string& pattern) {
  std::vector<std::string> out = {"a",    "b",  "Z",  "0",  "9",
                                  "_",    "-",  ".",  " ",  "\t",
                                  "\n",   "\v", "\f", "\r", std::string(1, '\0'),
                                  "\x7f", "é",  "ÿ",  "中", "\xEF\xBF\xBF",
                                  "😀"};
  for (size_t i = 0; i < pattern.size();) {
    const auto lead = static_cast<unsigned char>(pattern[i]);
    const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    out.push_back(pattern.substr(i, length));
    i += length;
  }
  return out;
}

std::string random_string(std::mt19937& rng, const std::vector<std::string>& letters) {
  std::string s;
  for (size_t n = rng() % 9; n > 0; --n) s += letters[rng() % letters.size()];
  return s;
}

// A random path through the automaton, stopping at random once accepting: mostly strings the
// grammar accepts (checking it accepts nothing PCRE2 rejects), else ones it could still extend.
// Each step picks a next *state* first, then a byte leading there: in [a-z0-9.]+@ the '@' is as
// likely as staying in the loop.
std::string walk(GrammarAutomaton& automaton, std::mt19937& rng) {
  std::string s;
  StateId state = automaton.start();
  while (s.size() < 24 && !(automaton.accepts(state) && rng() % 3 == 0)) {
    std::map<StateId, std::vector<uint8_t>> next;
    for (int b = 0; b < 256; ++b)
      if (StateId to = automaton.advance(state, static_cast<uint8_t>(b)); to != GrammarAutomaton::kDead)
        next[to].push_back(static_cast<uint8_t>(b));
    if (next.empty()) break;
    const std::vector<uint8_t>& bytes = std::next(next.begin(), rng() % next.size())->second;
    const uint8_t b = bytes[rng() % bytes.size()];
    s.push_back(static_cast<char>(b));
    state = automaton.advance(state, b);
  }
  return s;
}

// A near miss (or a near hit): one edit, some of them byte-level so UTF-8 may break.
std::string mutate(std::string s, std::mt19937& rng, const std::vector<std::string>& letters) {
  const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
  const std::string& letter = letters[rng() % letters.size()];
  switch (rng() % 6) {
    case 0:
      if (at < s.size()) s.erase(at, 1);
      break;
    case 1:
      s.insert(at, letter);
      break;
    case 2:
      if (at < s.size()) s.replace(at, 1, letter);
      break;
    case 3:
      s += s.substr(at);
      break;
    case 4:
      s = s.substr(0, at);
      break;
    case 5:
      if (at + 1 < s.size()) std::swap(s[at], s[at + 1]);
      break;
  }
  return s;
}

// Both answers for `subject` must agree; returns PCRE2's.
bool check(GrammarAutomaton& automaton, Pcre& pcre, const std::string& subject) {
  const bool expected = pcre.full_match(subject);
  EXPECT_EQ(automaton.matches(subject), expected) << "subject " << shown(subject);
  return expected;
}

// Strings per pattern: random, walks, and mutations of the matching ones among those.
constexpr int kRandom = 150, kWalks = 100, kMutations = 300;

TEST(RegexGrammarDifferential, MatchesLikePcre2) {
  std::mt19937 rng(20240611);
  size_t total = 0, total_matched = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE("regex " + c.regex);
    GrammarAutomaton automaton(regex_grammar(c.regex));
    Pcre pcre(c.pcre.empty() ? c.regex : c.pcre);
    const std::vector<std::string> letters = alphabet(c.regex);
    std::vector<std::string> subjects = c.examples;
    for (int i = 0; i < kRandom; ++i) subjects.push_back(random_string(rng, letters));
    for (int i = 0; i < kWalks; ++i) subjects.push_back(walk(automaton, rng));
    std::vector<std::string> matching;
    for (const std::string& s : subjects) {
      if (check(automaton, pcre, s)) matching.push_back(s);
      if (HasFailure()) return;  // the first wrong answer is the one to read
    }
    for (const std::string& s : c.examples) EXPECT_TRUE(pcre.full_match(s)) << "example " << shown(s);
    // Near misses: one or two edits of matching strings.
    ASSERT_FALSE(matching.empty());
    size_t matched = matching.size();
    for (int i = 0; i < kMutations; ++i) {
      std::string s = mutate(matching[rng() % matching.size()], rng, letters);
      if (i % 2) s = mutate(s, rng, letters);
      matched += check(automaton, pcre, s);
      if (HasFailure()) return;
    }
    // Not vacuous: each pattern saw both answers, several times.
    const size_t count = subjects.size() + kMutations;
    EXPECT_GT(matched, 5u);
    EXPECT_LT(matched, count - 5);
    total += count;
    total_matched += matched;
  }
  EXPECT_GT(total, 25000u);
  EXPECT_GT(total_matched, 5000u);
  std::printf("%zu strings, %zu matching\n", total, total_matched);
}

// A random regex over a and b: nested groups, alternations (some empty) and quantifiers -- the
// shapes (a?b*){2,}, ((a|)*)+ that the nullable-repetition rewriting must get right.
std::string random_regex(std::mt19937& rng, int depth) {
  std::string atom;
  switch (depth <= 0 ? rng() % 3 : rng() % 9) {
    case 0:
      atom = "a";
      break;
    case 1:
      atom = "b";
      break;
    case 2:
      atom = rng() % 2 ? "[ab]" : "";
      break;
    case 3:
    case 4:
      atom = random_regex(rng, depth - 1) + random_regex(rng, depth - 1);
      break;
    case 5:
    case 6:
      atom = "(" + random_regex(rng, depth - 1) + "|" + random_regex(rng, depth - 1) + ")";
      break;
    default:
      atom = "(" + random_regex(rng, depth - 1) + ")";
  }
  if (atom.empty() || rng() % 2) return atom;
  if (atom.size() > 1 && !(atom.front() == '(' && atom.back() == ')') && atom != "[ab]") atom = "(" + atom + ")";
  static const char* const kQuantifiers[] = {"*",    "+",  "?",  "{2}",  "{0,2}", "{1,3}",
                                             "{2,}", "*?", "+?", "{0,}", "{0}",   "{1}"};
  return atom + kQuantifiers[rng() % std::size(kQuantifiers)];
}

TEST(RegexGrammarDifferential, RandomPatternsOnEveryShortString) {
  std::vector<std::string> subjects = {""};  // every string over {a, b, c} up to 5 characters
  for (size_t i = 0; subjects[i].size() < 5; ++i)
    for (char c : {'a', 'b', 'c'}) subjects.push_back(subjects[i] + c);
  std::mt19937 rng(7);
  size_t checks = 0;
  for (int p = 0; p < 120; ++p) {
    const std::string regex = random_regex(rng, 4);
    SCOPED_TRACE("regex " + regex);
    GrammarAutomaton automaton(regex_grammar(regex));
    Pcre pcre(regex);
    for (const std::string& s : subjects) {
      check(automaton, pcre, s);
      if (HasFailure()) return;
    }
    checks += subjects.size();
  }
  EXPECT_EQ(checks, 120u * 364u);
}

TEST(RegexGrammar, LargeCountsAndDeepNesting) {
  GrammarAutomaton exact(regex_grammar("a{10000}"));
  EXPECT_TRUE(exact.matches(std::string(10000, 'a')));
  EXPECT_FALSE(exact.matches(std::string(9999, 'a')));
  EXPECT_FALSE(exact.matches(std::string(10001, 'a')));
  GrammarAutomaton bounded(regex_grammar("[ab]{2,10000}"));
  EXPECT_TRUE(bounded.matches(std::string(10000, 'b')));
  EXPECT_FALSE(bounded.matches(std::string(10001, 'b')));
  EXPECT_FALSE(bounded.matches("a"));
  // Repeating a nullable item repeats its non-empty part: x{0,10000}, not 10000 ways to place "".
  GrammarAutomaton optional_x(regex_grammar("(x?){10000}"));
  EXPECT_TRUE(optional_x.matches(std::string(1000, 'x')));
  EXPECT_LT(optional_x.num_states(), 1100u);
  // 200 nested groups, each starred: still one character loop, no left recursion.
  std::string nested = "a";
  for (int i = 0; i < 200; ++i) nested = "(" + nested + "|)*";
  GrammarAutomaton deep(regex_grammar(nested));
  EXPECT_TRUE(deep.matches(""));
  EXPECT_TRUE(deep.matches("aaaa"));
  EXPECT_FALSE(deep.matches("ab"));
  EXPECT_THROW(regex_grammar("(" + nested + ")"), GrammarError);
}

TEST(RegexGrammar, SymbolEmbedsInALargerGrammar) {
  GrammarBuilder builder;
  const int32_t root = builder.named("root");
  Sequence body = builder.literal("<");
  body.push_back(regex_symbol(builder, "[0-9]+(\\.[0-9]+)?", "number"));
  const Sequence close = builder.literal(">");
  body.insert(body.end(), close.begin(), close.end());
  builder.define(root, {body});
  GrammarAutomaton automaton(std::move(builder).build(root));
  EXPECT_TRUE(automaton.matches("<12.5>"));
  EXPECT_TRUE(automaton.matches("<7>"));
  EXPECT_FALSE(automaton.matches("<7.>"));
  EXPECT_FALSE(automaton.matches("12"));
}

TEST(RegexGrammar, ErrorLeavesTheBuilderUntouched) {
  GrammarBuilder builder;
  const int32_t root = builder.named("root");
  EXPECT_THROW(regex_symbol(builder, "[a-z]+(", "bad"), GrammarError);
  EXPECT_THROW(regex_symbol(builder, "abc\\1", "bad"), GrammarError);
  builder.define(root, {builder.literal("x")});
  const Grammar grammar = std::move(builder).build(root);
  EXPECT_EQ(grammar.rules.size(), 1u);
  EXPECT_EQ(grammar.byte_sets.size(), 1u);
}

struct ErrorCase {
  std::string regex;
  std::string message;  // the whole message, or a part of it
};

TEST(RegexGrammarErrors, NameTheProblemAndWhere) {
  const std::vector<ErrorCase> errors = {
      {"(a)b\\1", "regex at 4: backreferences are not supported"},
      {"(?P<n>a)(?P=n)", "regex at 8: backreferences are not supported"},
      {"(?<n>a)\\k<n>", "regex at 7: backreferences are not supported"},
      {"a(?=b)", "regex at 1: lookarounds"},
      {"a(?!b)", "regex at 1: lookarounds"},
      {"(?<=a)b", "regex at 0: lookarounds"},
      {"(?<!a)b", "regex at 0: lookarounds"},
      {"\\bfoo", "regex at 0: word boundaries"},
      {"foo\\B", "regex at 3: word boundaries"},
      {"(ab", "regex at 0: unbalanced parenthesis: '(' is never closed"},
      {"a(b(c)", "regex at 1: unbalanced parenthesis"},
      {"ab)", "regex at 2: unbalanced parenthesis: ')' without a matching '('"},
      {"x[ab", "regex at 1: unbalanced bracket: '[' is never closed"},
      {"[]", "regex at 0: empty character class"},
      {"[^]", "regex at 0: empty character class"},
      {"[^\\s\\S]", "regex at 0: the character class matches no character"},
      {"[^\\x00-\\u{10FFFF}]", "regex at 0: the character class matches no character"},
      {"*a", "regex at 0: quantifier '*' has nothing to repeat"},
      {"a|+b", "regex at 2: quantifier '+' has nothing to repeat"},
      {"(?:?)", "regex at 3: quantifier '?' has nothing to repeat"},
      {"^*", "regex at 1: quantifier '*' has nothing to repeat"},
      {"{2}", "regex at 0: quantifier '{2}' has nothing to repeat"},
      {"a**", "regex at 2: a quantifier cannot follow another one"},
      {"a{2}{3}", "regex at 4: a quantifier cannot follow another one"},
      {"a{3,2}", "regex at 1: repetition {3,2} has its minimum above its maximum"},
      {"a{10001}", "regex at 1: repetition {10001} is above the limit of 10000 repetitions"},
      {"a{1,20000}", "regex at 1: repetition {1,20000} is above the limit of 10000"},
      {"a{99999999999999999999999,}", "above the limit of 10000"},
      {"a^b", "regex at 1: '^' is only supported at the very start of the pattern"},
      {"(^a)", "regex at 1: '^' is only supported"},
      {"a$b", "regex at 1: '$' is only supported at the very end of the pattern"},
      {"(a$)", "regex at 2: '$' is only supported"},
      {"[z-a]", "regex at 1: character range z-a is out of order"},
      {"[\\d-z]", "regex at 1: a range in a character class must go from one character to another"},
      {"\\q", "regex at 0: unknown escape '\\q'"},
      {"\\p{L}", "regex at 0: unicode property escapes"},
      {"\\x4", "regex at 0: '\\x' needs 2 hex digits"},
      {"\\u12", "regex at 0: '\\u' needs 4 hex digits"},
      {"\\u{110000}", "regex at 0: U+110000 is not a character"},
      {"\\u{}", "regex at 0: '\\u{' needs 1 to 6 hex digits"},
      {"a\\uD800", "regex at 1: \\uD800 is a lone surrogate"},
      {"\\uDE00\\uD83D", "regex at 0: \\uDE00 is a lone surrogate"},
      {"(?i)abc", "regex at 0: inline flags such as (?i) are not supported"},
      {"a(?x:b)", "regex at 1: inline flags"},
      {"(?R)", "regex at 0: unsupported group syntax '(?R'"},
      {"a*+", "regex at 2: possessive quantifiers"},
      {"(?>a)", "regex at 0: atomic groups"},
      {"(?#note)", "regex at 0: comments"},
      {"\\Aa", "regex at 0: anchors"},
      {"a\\z", "regex at 1: anchors"},
      {"\\01", "regex at 0: octal escapes are not supported"},
      {"abc\\", "regex at 3: the pattern ends with a lone backslash"},
      {"a\xff", "regex at 1: invalid UTF-8 in the pattern"},
      {"\xc3", "regex at 0: invalid UTF-8 in the pattern"},
      {"\xed\xa0\x80", "regex at 0: invalid UTF-8"},  // an encoded surrogate
      {"\xc0\xaf", "regex at 0: invalid UTF-8"},      // an overlong '/'
      {"[[:alpha:]]", "regex at 1: POSIX character classes"},
      {"(?<1a>x)", "regex at 3: bad group name"},
      {"(?P<a", "regex at 4: bad group name"},
  };
  for (const ErrorCase& e : errors) {
    try {
      regex_grammar(e.regex);
      ADD_FAILURE() << "no error for " << shown(e.regex);
    } catch (const GrammarError& error) {
      EXPECT_NE(std::string(error.what()).find(e.message), std::string::npos)
          << "regex " << shown(e.regex) << ": got '" << error.what() << "', expected '" << e.message << "'";
    }
  }
}

}  // namespace
}  // namespace drift::grammar
