// GBNF (core/grammar/gbnf_grammar.h): whole grammars (arithmetic, JSON, a list, chess moves,
// Unicode text) parsed and run on the automaton against sentences they must and must not match;
// every piece of the notation; llama.cpp's layout rules (where a newline ends a rule); and the
// errors, each naming line:column.
#include "core/grammar/gbnf_grammar.h"

#include <set>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/grammar/grammar_automaton.h"

namespace drift::grammar {
namespace {

using ::testing::HasSubstr;

// Every string in `yes` is a sentence of the grammar, none in `no` is.
void expect_language(std::string_view gbnf, const std::vector<std::string>& yes, const std::vector<std::string>& no) {
  GrammarAutomaton automaton(gbnf_grammar(gbnf));
  for (const std::string& s : yes) EXPECT_TRUE(automaton.matches(s)) << "should match: " << s;
  for (const std::string& s : no) EXPECT_FALSE(automaton.matches(s)) << "should not match: " << s;
}

std::string error_of(std::string_view gbnf) {
  try {
    gbnf_grammar(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

constexpr std::string_view kArithmetic = R"gbnf(
# Integer arithmetic: + - * / over numbers, unary minus, parentheses, spaces around operators.
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws [*/] ws factor)*
factor ::= number | "-" factor | "(" ws expr ws ")"
number ::= [0-9]+
ws     ::= " "*
)gbnf";

TEST(GbnfGrammar, Arithmetic) {
  expect_language(kArithmetic, {"1", "1+2*3", "(1 + 2) * -3", "((42))", "10 / 2 - 3", "--7"},
                  {"", "1+", "(1+2", "1 2", "1+*2", "a", "1 +", "()"});
}

TEST(GbnfGrammar, Json) {
  // Rules spanning lines the ways llama.cpp's json.gbnf does: after `::=`, inside parentheses.
  constexpr std::string_view kJson = R"gbnf(
# JSON (RFC 8259), whitespace allowed around every token.
root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")

object ::=
  "{" ws (
    member
    (ws "," ws member)*
    ws
  )? "}"
member ::= string ws ":" ws value

array  ::= "[" ws ( value (ws "," ws value)* ws )? "]"

string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})  # escapes as RFC 8259 has them

number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= | [ \t\n\r] ws
)gbnf";
  expect_language(kJson,
                  {R"({"a": [1, 2.5e-3, true, null], "b": {"c": "d\n\u00e9\""}})", " [ ] ",
                   "\"h\xC3\xA9llo \xE4\xB8\x96\"", "-0.5", "{}", "\n{\n  \"k\" : false\n}\n", "1E+10"},
                  {R"({"a":1,})", "[1 2]", "01", "{'a':1}", "\"\x01\"", "\"abc", "tru", R"("\q")", "\"\xFF\"",
                   "\"\xC3\"", "[1,]", "1."});
}

TEST(GbnfGrammar, List) {
  constexpr std::string_view kChecklist = R"gbnf(
root    ::= heading ("- [" [ x] "] " item "\n")+
heading ::= "CHECKLIST:\n"
item    ::= [^\n\[\]]+   # anything on one line but brackets
)gbnf";
  expect_language(kChecklist,
                  {"CHECKLIST:\n- [ ] buy milk\n- [x] write tests\n", "CHECKLIST:\n- [x] \xC3\xA9t\xC3\xA9\n"},
                  {"CHECKLIST:\n", "CHECKLIST:\n- [y] a\n", "CHECKLIST:\n- [ ] \n", "CHECKLIST:\n- [ ] a",
                   "CHECKLIST:\n- [ ] a [b]\n", "checklist:\n- [ ] a\n"});
}

TEST(GbnfGrammar, ChessMoves) {
  // A root spanning lines inside parentheses, with comments and blank lines among its symbols.
  constexpr std::string_view kChess = R"gbnf(
# Numbered pairs of moves: "1. e4 e5\n2. Nf3 Nc6\n" and so on.
root ::= (
    # the first pair, numbered 1
    "1. " move " " move "\n"

    # then at least one more, numbered with one or two digits
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move   ::= (pawn | piece | castle) [+#]?
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
piece  ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle ::= "O-O" "-O"?
)gbnf";
  expect_language(kChess, {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd8#\n10. exd8=Q+ Kxd8\n"},
                  {"1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4 e5\n100. a3 a6\n", "1. e4 e5\n2. Zf3 a6\n",
                   "2. e4 e5\n3. a3 a6\n", "1. e4 e5\n2. a3 a6"});
}

TEST(GbnfGrammar, UnicodeClassesAndEscapes) {
  constexpr std::string_view kGreeting = R"gbnf(
root     ::= greeting " " name "!"?
greeting ::= "\u4F60\u597D" | "こんにちは" | "\U0001F600"
name     ::= [一-鿿]{1,3} | [ぁ-ゟ]+ | [\u00C0-\u00DE] [a-z]*
)gbnf";
  expect_language(kGreeting, {"你好 王小明", "こんにちは さくら!", "\xF0\x9F\x98\x80 \xC3\x89lodie", "你好 王"},
                  {"你好 王小明明", "你好 abc", "你好 ", "\xF0\x9F\x98 x", "你好 王!!", "你好 \xC3\xA9lodie"});
}

TEST(GbnfGrammar, EscapesAreCodePoints) {
  // As in llama.cpp, \xHH names U+00HH (two UTF-8 bytes past 7F), not a raw byte.
  expect_language(R"(root ::= "\xE9" [\xC0-\xFF])", {"\xC3\xA9\xC3\xBF"}, {"\xE9\xFF", "\xC3\xA9"});
  expect_language(R"(root ::= "\n\r\t\\\"\[\]\-" [\[\]\-])", {"\n\r\t\\\"[]--", "\n\r\t\\\"[]-]"}, {"\n\r\t\\\"[]-a"});
  expect_language(R"(root ::= [\x41-\u005A\U00000061])", {"A", "Z", "a"}, {"b", "["});
}

TEST(GbnfGrammar, CharacterClasses) {
  expect_language("root ::= [a-] [-b]", {"a-", "--", "ab", "-b"}, {"aa", "bb"});
  expect_language("root ::= [^a-z\\n]+", {"A", "\xC3\xA9", "1 ;", "\xF0\x9F\x98\x80"}, {"a", "\n", "", "A\n"});
  expect_language("root ::= [^]", {"a", "\n", "\xE4\xB8\x96"}, {"", "ab"});  // nothing excluded: any character
  expect_language("root ::= [#\"]", {"#", "\""}, {""});                      // '#' starts no comment here
}

TEST(GbnfGrammar, AnyCharacter) {
  expect_language("root ::= \"[\" . \"]\"  # . is one whole character",
                  {"[a]", "[\xC3\xA9]", "[\xF0\x9F\x98\x80]", "[\n]", "[]]"},
                  {"[]", "[ab]", "[\xC3]", "[\xFF]", "[\xED\xA0\x80]"});
}

TEST(GbnfGrammar, Repetitions) {
  expect_language(R"(root ::= "ab"{2})", {"abab"}, {"ab", "ababab", ""});
  expect_language(R"(root ::= "a"{2,})", {"aa", "aaaaa"}, {"a", ""});
  expect_language(R"(root ::= "a"{1,3})", {"a", "aaa"}, {"", "aaaa"});
  expect_language(R"(root ::= "a"{,2})", {"", "aa"}, {"aaa"});
  expect_language(R"(root ::= "a"{ 1 , 2 })", {"a", "aa"}, {"", "aaa"});
  expect_language(R"(root ::= "a"{0} "b")", {"b"}, {"ab"});
  expect_language(R"(root ::= "a"* "b"+ "c"?)", {"b", "aabbc", "abb"}, {"", "ac", "abcc"});
  // Repetitions stack on what they follow, as in llama.cpp: ("ab"{2})?.
  expect_language(R"(root ::= "ab"{2}?)", {"", "abab"}, {"ab"});
  expect_language(R"(root ::= ("x" [0-9]){2,3})", {"x1x2", "x1x2x3"}, {"x1", "x1x2x3x4"});
  std::string many(kMaxGbnfRepetition, 'a');
  expect_language(R"(root ::= "a"{0,10000})", {"", many}, {many + "a"});
}

TEST(GbnfGrammar, EmptyAlternatives) {
  expect_language(R"(root ::= "a" | | "b")", {"", "a", "b"}, {"ab"});
  expect_language(R"(root ::= ("x" |) "y")", {"y", "xy"}, {"x"});
  expect_language(R"(root ::= "")", {""}, {"a"});
  expect_language("root ::= ()", {""}, {"a"});
  expect_language("root ::=", {""}, {"a"});
  expect_language("root ::= | \" \" | \"\\n\" [ \\t]{0,20}", {"", " ", "\n\t "}, {"  "});
}

TEST(GbnfGrammar, NamesAndReferences) {
  // `_` and leading digits in names; references before definitions; an unused rule.
  expect_language("root ::= my_rule 2nd\nmy_rule ::= \"a\"\n2nd ::= UPPER-case\nUPPER-case ::= \"b\"\nunused ::= \"z\"",
                  {"ab"}, {"a", "z"});
}

TEST(GbnfGrammarLayout, NewlineRulesFollowLlamaCpp) {
  // A newline continues a rule after `::=`, after `|` and inside parentheses ...
  expect_language("root ::=\n  \"a\"\n", {"a"}, {""});
  expect_language("root ::= \"a\" |\n  \"b\"", {"a", "b"}, {"ab"});
  expect_language("root ::= (\"a\"\n  \"b\"\n)", {"ab"}, {"a"});
  expect_language("root ::= \"a\" | # comment\n\n  \"b\"", {"a", "b"}, {});
  // ... and ends it anywhere else.
  EXPECT_EQ(error_of("root ::= \"a\"\n  \"b\"\n"), "grammar 2:3: expected a rule name, found '\"'");
  EXPECT_THAT(error_of("root ::= \"a\"\n  | \"b\"\n"), HasSubstr("grammar 2:3: expected a rule name, found '|'"));
  EXPECT_EQ(error_of("root\n::= \"a\""), "grammar 1:5: expected '::=' after rule name 'root'");
}

TEST(GbnfGrammarLayout, InsensitiveToCommentsAndWhitespace) {
  const std::string compact = "root ::= item (\",\" item)*\nitem ::= [a-z]+ | \"(\" root \")\"\n";
  const std::string spread =
      "# a comma-separated list of words or parenthesized lists\n"
      "\n"
      "root ::=   # the start\n"
      "    item   ( \",\" # separator\n"
      "      item )*   \n"
      "\n"
      "\titem\t::= [a-z]+ |   # a word\n"
      "  \"(\" root \")\"  # or a nested list";
  std::string crlf;
  for (char c : spread) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::string expected = to_gbnf(gbnf_grammar(compact));
  EXPECT_EQ(to_gbnf(gbnf_grammar(spread)), expected);
  EXPECT_EQ(to_gbnf(gbnf_grammar(crlf)), expected);
  EXPECT_EQ(to_gbnf(gbnf_grammar(compact + "\n\n# trailing comment")), expected);
  expect_language(crlf, {"a,(b,c),d", "(((x)))"}, {"a,", "()", "a b"});
}

TEST(GbnfGrammarDump, ToGbnfIsNonEmptyAndReparses) {
  const Grammar grammar = gbnf_grammar(kArithmetic);
  const std::string dump = to_gbnf(grammar);
  EXPECT_THAT(dump, HasSubstr("root ::="));
  EXPECT_THAT(dump, HasSubstr("expr ::="));
  // An ASCII grammar's dump is GBNF again with the same language (past ASCII its byte sets would
  // read as code points).
  expect_language(dump, {"1", "(1 + 2) * -3", "10 / 2 - 3"}, {"", "1+", "(1+2"});
}

TEST(GbnfGrammarDump, AnonymousRulesNeverShareAUserRuleName) {
  // The first anonymous rule (the group) is rule 3, by default named root-3, as a user rule is here.
  const Grammar grammar =
      gbnf_grammar("root ::= (\"a\" | \"b\") root-3 (\"c\" | \"d\")*\nroot-3 ::= \"x\"\nroot-4 ::= \"y\"\n");
  const std::set<std::string> names(grammar.rule_names.begin(), grammar.rule_names.end());
  EXPECT_EQ(names.size(), grammar.rule_names.size()) << to_gbnf(grammar);
  GrammarAutomaton automaton(grammar);
  EXPECT_TRUE(automaton.matches("axcd"));
  EXPECT_FALSE(automaton.matches("ay"));
}

TEST(GbnfGrammarErrors, UndefinedAndMissingRules) {
  EXPECT_EQ(error_of("root ::= \"[\" value \"]\"\n"), "grammar 1:14: rule 'value' is used but never defined");
  EXPECT_EQ(error_of("expr ::= \"a\"\n"), "grammar: no 'root' rule (the grammar starts at the rule named root)");
  EXPECT_THAT(error_of(""), HasSubstr("no 'root' rule"));
  EXPECT_THAT(error_of("# only a comment\n"), HasSubstr("no 'root' rule"));
  EXPECT_EQ(error_of("root ::= \"a\"\nx ::= \"b\"\nroot ::= \"c\"\n"),
            "grammar 3:1: rule 'root' is defined twice (first at 1:1)");
}

TEST(GbnfGrammarErrors, UnterminatedStringsAndClasses) {
  EXPECT_EQ(error_of("root ::= x\nx ::= \"abc"), "grammar 2:7: unterminated string");
  EXPECT_EQ(error_of("root ::= [a-z"), "grammar 1:10: unterminated character class");
  EXPECT_EQ(error_of("root ::= [a-"), "grammar 1:10: unterminated character class");
  EXPECT_EQ(error_of("root ::= (\"a\" | \"b\"\n"), "grammar 1:10: unclosed '('");
  EXPECT_EQ(error_of("root ::= \"a\")"), "grammar 1:13: unmatched ')'");
}

TEST(GbnfGrammarErrors, BadEscapesAndCharacters) {
  EXPECT_EQ(error_of(R"(root ::= "a\q")"), R"(grammar 1:12: bad escape '\q')");
  EXPECT_EQ(error_of(R"(root ::= [\d])"), R"(grammar 1:11: bad escape '\d')");
  EXPECT_EQ(error_of(R"(root ::= "\x4g")"), R"(grammar 1:11: expected 2 hex digits after '\x')");
  EXPECT_EQ(error_of(R"(root ::= "\u12")"), R"(grammar 1:11: expected 4 hex digits after '\u')");
  EXPECT_EQ(error_of(R"(root ::= "\U00110000")"), "grammar 1:11: U+110000 is past U+10FFFF");
  EXPECT_EQ(error_of(R"(root ::= "\uD800")"), "grammar 1:11: U+D800 is a surrogate, not a character");
  EXPECT_EQ(error_of("root ::= \"\xFF\""), "grammar 1:11: invalid UTF-8");
  EXPECT_EQ(error_of("root ::= [z-a]"), "grammar 1:11: reversed range U+007A-U+0061");
  EXPECT_EQ(error_of("root ::= []"), "grammar 1:10: empty character class");
  EXPECT_THAT(error_of("root ::=\n  [^\\x00-\\U0010FFFF]"), HasSubstr("grammar 2:3: "));
  // Columns count characters: the 'é' before the bad escape is one column, though two bytes.
  EXPECT_EQ(error_of("root ::= \"\xC3\xA9\" \"\\q\""), R"(grammar 1:15: bad escape '\q')");
}

TEST(GbnfGrammarErrors, LeftRecursion) {
  EXPECT_EQ(error_of("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]+\n"),
            "grammar: rule 'expr' is left-recursive (it can reach itself before matching a character)");
  EXPECT_THAT(error_of("root ::= a\na ::= b \"x\"\nb ::= a | \"y\"\n"), HasSubstr("left-recursive"));
  // Hidden behind a rule that can match nothing.
  EXPECT_THAT(error_of("root ::= ws root \"x\" | \"y\"\nws ::= \" \"*\n"), HasSubstr("left-recursive"));
}

TEST(GbnfGrammarErrors, MalformedRules) {
  EXPECT_EQ(error_of("root \"a\""), "grammar 1:6: expected '::=' after rule name 'root'");
  EXPECT_EQ(error_of("root := \"a\""), "grammar 1:6: expected '::=' after rule name 'root'");
  EXPECT_EQ(error_of("::= \"a\""), "grammar 1:1: expected a rule name, found ':'");
  EXPECT_THAT(error_of("root ::= \"a\" b ::= \"c\""), HasSubstr("grammar 1:16: '::=' inside a rule body"));
  EXPECT_EQ(error_of("root ::= \"a\" ; \"b\""), "grammar 1:14: unexpected ';'");
  EXPECT_EQ(error_of("root ::= *\"a\""), "grammar 1:10: '*' must follow something to repeat");
  EXPECT_EQ(error_of("root ::= (+)"), "grammar 1:11: '+' must follow something to repeat");
  EXPECT_THAT(error_of("root ::= <think> \"x\""), HasSubstr("grammar 1:10: tokens"));
  EXPECT_THAT(error_of("root ::= (!<[42]>)"), HasSubstr("grammar 1:11: tokens"));
}

TEST(GbnfGrammarErrors, RepetitionCounts) {
  EXPECT_EQ(error_of(R"(root ::= "a"{10001})"), "grammar 1:14: repetition count 10001 is over the limit of 10000");
  EXPECT_EQ(error_of(R"(root ::= "a"{0,99999999999999999999999})"),
            "grammar 1:16: repetition count 99999999999999999999999 is over the limit of 10000");
  EXPECT_EQ(error_of(R"(root ::= "a"{3,2})"), "grammar 1:13: repetition {3,2} has its maximum below its minimum");
  EXPECT_EQ(error_of(R"(root ::= "a"{})"), "grammar 1:14: expected a count after '{'");
  EXPECT_EQ(error_of(R"(root ::= "a"{,})"), "grammar 1:15: expected a count after '{,'");
  EXPECT_EQ(error_of(R"(root ::= "a"{2)"), "grammar 1:15: expected ',' or '}' in a repetition");
  // The limit on all repetitions together: ten of 10000 fit, an eleventh does not.
  std::string ten = "root ::=";
  for (int i = 0; i < 10; ++i) ten += R"( "a"{10000})";
  EXPECT_NO_THROW(gbnf_grammar(ten));
  EXPECT_THAT(error_of(ten + R"( "b"{1})"),
              HasSubstr("grammar 1:123: the grammar's repetitions expand to over 100000"));
}

TEST(GbnfGrammarErrors, Nesting) {
  const auto nested = [](int depth) {
    return "root ::= " + std::string(depth, '(') + "\"x\"" + std::string(depth, ')');
  };
  expect_language(nested(kMaxGbnfNesting - 1), {"x"}, {""});
  EXPECT_EQ(error_of(nested(100000)), "grammar 1:266: groups and repetitions nest more than 256 deep");
  EXPECT_THAT(error_of("root ::= \"x\"" + std::string(300, '?')), HasSubstr("nest more than 256 deep"));
  EXPECT_THAT(error_of("root ::= (((\"x\"" + std::string(254, '*') + ")))"), HasSubstr("grammar 1:11: groups"));
}

TEST(GbnfGrammarErrors, RootMatchingNothing) {
  EXPECT_EQ(error_of("root ::= a\na ::= \"x\" a\n"), "grammar: rule 'root' matches no string");
}

}  // namespace
}  // namespace drift::grammar
