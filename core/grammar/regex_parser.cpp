#include "core/grammar/regex_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/grammar/regex_grammar.h"

namespace drift::grammar::regex {
namespace {

// Groups may nest this deep: parsing and translating recurse a few frames per level.
constexpr int kMaxDepth = 200;

Node node(Node::Kind kind, bool nullable, std::vector<Node> children = {}) {
  Node n;
  n.kind = kind;
  n.nullable = nullable;
  n.children = std::move(children);
  return n;
}

Node chars(std::vector<CodePointRange> ranges) {
  Node n = node(Node::Kind::Chars, false);
  n.ranges = normalize(std::move(ranges));
  return n;
}

Node concat(std::vector<Node> items) {
  if (items.size() == 1) return std::move(items[0]);
  const bool nullable = std::all_of(items.begin(), items.end(), [](const Node& n) { return n.nullable; });
  const Node::Kind kind = items.empty() ? Node::Kind::Empty : Node::Kind::Concat;  // before the move below
  return node(kind, nullable, std::move(items));
}

Node alternation(std::vector<Node> alternatives) {
  const bool nullable = std::any_of(alternatives.begin(), alternatives.end(), [](const Node& n) { return n.nullable; });
  return node(Node::Kind::Alt, nullable, std::move(alternatives));
}

struct Bounds {
  int64_t min = 0;
  std::optional<int64_t> max;
};

Node repetition(Node item, Bounds bounds) {
  const bool nullable = bounds.min == 0 || item.nullable;
  std::vector<Node> children;
  children.push_back(std::move(item));
  Node n = node(Node::Kind::Repeat, nullable, std::move(children));
  n.min = bounds.min;
  n.max = bounds.max;
  return n;
}

// ASCII meanings, as in ECMAScript and in PCRE without UCP: a schema's \d means [0-9].
const std::vector<CodePointRange> kDigit = {{'0', '9'}};
const std::vector<CodePointRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodePointRange> kSpace = {{'\t', '\r'}, {' ', ' '}};  // \t \n \v \f \r and space

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
uint32_t hex_value(char c) { return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// What an escape or a class member stands for: a set, and whether it is one code point (so it can
// be the end of a range a-z).
struct Item {
  std::vector<CodePointRange> ranges;
  bool single = false;
};

Item single(uint32_t cp) { return {{{cp, cp}}, true}; }

// Recursive descent over the pattern's bytes; every error names the byte offset it is about.
class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}
  Node parse();

 private:
  Node alternatives(int depth);
  Node sequence(int depth);
  Node quantified(Node atom);
  std::optional<Bounds> quantifier();
  std::optional<Bounds> counted();
  std::optional<int64_t> number();
  Node atom(int depth);
  Node group(int depth);
  void group_prefix(size_t open);
  Node char_class();
  void class_member(std::vector<CodePointRange>& ranges);
  Item class_atom();
  Item escape(bool in_class);
  Item unicode_escape(size_t start);
  uint32_t hex_digits(size_t start, size_t count);
  uint32_t braced_hex(size_t start);
  uint32_t code_point();

  bool at_end() const { return i_ >= p_.size(); }
  bool next_is(char c) const { return i_ < p_.size() && p_[i_] == c; }
  bool next_is(std::string_view s) const { return p_.substr(i_).starts_with(s); }
  template <typename... Args>
  [[noreturn]] void fail(size_t at, fmt::format_string<Args...> problem, Args&&... args) const {
    throw GrammarError(fmt::format("regex at {}: {}", at, fmt::format(problem, std::forward<Args>(args)...)));
  }

  std::string_view p_;
  size_t i_ = 0;
};

Node Parser::parse() {
  if (next_is('^')) ++i_;  // matching is always anchored: the ^ says nothing more
  Node tree = alternatives(0);
  if (!at_end()) fail(i_, "unbalanced parenthesis: ')' without a matching '('");
  return tree;
}

Node Parser::alternatives(int depth) {
  std::vector<Node> alts;
  alts.push_back(sequence(depth));
  while (next_is('|')) {
    ++i_;
    alts.push_back(sequence(depth));
  }
  return alts.size() == 1 ? std::move(alts[0]) : alternation(std::move(alts));
}

Node Parser::sequence(int depth) {
  std::vector<Node> items;
  while (!at_end() && !next_is('|') && !next_is(')')) {
    // A final $ is the end of the whole match, which is where a full match ends anyway.
    if (next_is('$') && i_ + 1 == p_.size() && depth == 0) {
      ++i_;
      break;
    }
    items.push_back(quantified(atom(depth)));
  }
  return concat(std::move(items));
}

Node Parser::quantified(Node atom) {
  const std::optional<Bounds> bounds = quantifier();
  if (!bounds) return atom;
  const size_t after = i_;
  if (quantifier()) fail(after, "a quantifier cannot follow another one (put the repeated part in a group)");
  return repetition(std::move(atom), *bounds);
}

// * + ? {n} {n,} {n,m} {,m}, and the lazy form of each (same language: we only ask whether the
// whole output matches, not which part each group took).
std::optional<Bounds> Parser::quantifier() {
  Bounds bounds;
  if (next_is('*')) {
    ++i_;
  } else if (next_is('+')) {
    ++i_;
    bounds.min = 1;
  } else if (next_is('?')) {
    ++i_;
    bounds.max = 1;
  } else if (auto c = next_is('{') ? counted() : std::nullopt) {
    bounds = *c;
  } else {
    return std::nullopt;
  }
  if (next_is('?')) {
    ++i_;
  } else if (next_is('+')) {
    fail(i_, "possessive quantifiers (*+ ++ ?+ {{n,m}}+) are not supported");
  }
  return bounds;
}

// {n}, {n,}, {n,m} or {,m}; anything else (x{, {a}) is a literal '{', as in Python and PCRE.
std::optional<Bounds> Parser::counted() {
  const size_t open = i_++;
  const std::optional<int64_t> first = number();
  const bool comma = next_is(',');
  if (comma) ++i_;
  const std::optional<int64_t> second = comma ? number() : first;
  if (!next_is('}') || (!first && !second)) {
    i_ = open;
    return std::nullopt;
  }
  ++i_;
  const std::string_view text = p_.substr(open, i_ - open);
  if (first.value_or(0) > kMaxRegexRepeat || second.value_or(0) > kMaxRegexRepeat)
    fail(open, "repetition {} is above the limit of {} repetitions", text, kMaxRegexRepeat);
  if (second && *second < first.value_or(0)) fail(open, "repetition {} has its minimum above its maximum", text);
  return Bounds{first.value_or(0), second};
}

// Digits, saturating just past the limit (the caller rejects it; huge counts must not overflow).
std::optional<int64_t> Parser::number() {
  if (at_end() || !is_digit(p_[i_])) return std::nullopt;
  int64_t value = 0;
  for (; i_ < p_.size() && is_digit(p_[i_]); ++i_) value = std::min(value * 10 + (p_[i_] - '0'), kMaxRegexRepeat + 1);
  return value;
}

Node Parser::atom(int depth) {
  const size_t start = i_;
  switch (p_[i_]) {
    case '(':
      return group(depth);
    case '[':
      return char_class();
    case '.':
      ++i_;
      return chars(complement({{'\n', '\n'}}));
    case '\\':
      return chars(escape(false).ranges);
    case '*':
    case '+':
    case '?':
      fail(start, "quantifier '{}' has nothing to repeat", p_[i_]);
    case '{':
      if (counted()) fail(start, "quantifier '{}' has nothing to repeat", p_.substr(start, i_ - start));
      ++i_;
      return chars({{'{', '{'}});
    case '^':
      fail(start, "'^' is only supported at the very start of the pattern");
    case '$':
      fail(start, "'$' is only supported at the very end of the pattern");
    default: {
      const uint32_t cp = code_point();
      return chars({{cp, cp}});
    }
  }
}

// (...), (?:...), (?P<name>...), (?<name>...): all the same to a language.
Node Parser::group(int depth) {
  const size_t open = i_++;
  if (depth + 1 > kMaxDepth) fail(open, "groups are nested deeper than {}", kMaxDepth);
  if (next_is('?')) group_prefix(open);
  Node inner = alternatives(depth + 1);
  if (at_end()) fail(open, "unbalanced parenthesis: '(' is never closed");
  ++i_;  // ')'
  return inner;
}

void Parser::group_prefix(size_t open) {
  if (next_is("?:")) {
    i_ += 2;
    return;
  }
  if (next_is("?=") || next_is("?!") || next_is("?<=") || next_is("?<!"))
    fail(open, "lookarounds ((?= (?! (?<= (?<!) are not supported");
  if (next_is("?P=")) fail(open, "backreferences are not supported");
  if (next_is("?>")) fail(open, "atomic groups (?>...) are not supported");
  if (next_is("?#")) fail(open, "comments (?#...) are not supported");
  if (!next_is("?P<") && !next_is("?<")) {
    const bool flag = i_ + 1 < p_.size() && std::string_view("aiLmsux-^").find(p_[i_ + 1]) != std::string_view::npos;
    if (flag) fail(open, "inline flags such as (?i) are not supported");
    fail(open, "unsupported group syntax '(?{}'", p_.substr(i_ + 1, 1));
  }
  i_ += next_is("?P<") ? 3 : 2;
  const size_t name = i_;
  while (i_ < p_.size() && (is_alnum(p_[i_]) || p_[i_] == '_')) ++i_;
  if (i_ == name || is_digit(p_[name]) || !next_is('>'))
    fail(name, "bad group name (expected letters, digits, _ and '>')");
  ++i_;
}

// [...] or [^...]. A ']' right after '[' or '[^' is a literal ']' (Python, PCRE), not an empty class.
Node Parser::char_class() {
  const size_t open = i_++;
  const bool negated = next_is('^');
  if (negated) ++i_;
  const bool starts_with_bracket = next_is(']');
  std::vector<CodePointRange> ranges;
  for (bool first = true; first || !next_is(']'); first = false) {
    if (at_end() && starts_with_bracket)
      fail(open, "empty character class (a ']' right after '[' is a literal, so this class is never closed)");
    if (at_end()) fail(open, "unbalanced bracket: '[' is never closed");
    class_member(ranges);
  }
  ++i_;  // ']'
  if (negated) ranges = complement(ranges);
  if (normalize(ranges).empty()) fail(open, "the character class matches no character");
  return chars(std::move(ranges));
}

// One member: a character, a set such as \d, or a range a-z (a '-' first or last is a literal).
void Parser::class_member(std::vector<CodePointRange>& ranges) {
  const size_t start = i_;
  const Item low = class_atom();
  if (!next_is('-') || i_ + 1 >= p_.size() || p_[i_ + 1] == ']') {
    ranges.insert(ranges.end(), low.ranges.begin(), low.ranges.end());
    return;
  }
  ++i_;  // '-'
  const Item high = class_atom();
  if (!low.single || !high.single) fail(start, "a range in a character class must go from one character to another");
  if (high.ranges[0].first < low.ranges[0].first)
    fail(start, "character range {} is out of order", p_.substr(start, i_ - start));
  ranges.push_back({low.ranges[0].first, high.ranges[0].first});
}

Item Parser::class_atom() {
  if (next_is('\\')) return escape(true);
  for (std::string_view posix : {"[:", "[.", "[="})
    if (next_is(posix) && p_.find(std::string{posix[1], ']'}, i_ + 2) != std::string_view::npos)
      fail(i_, "POSIX character classes such as [:alpha:] are not supported");
  return single(code_point());
}

Item Parser::escape(bool in_class) {
  const size_t start = i_++;
  if (at_end()) fail(start, "the pattern ends with a lone backslash");
  const char c = p_[i_++];
  switch (c) {
    case 'd':
      return {kDigit};
    case 'D':
      return {complement(kDigit)};
    case 'w':
      return {kWord};
    case 'W':
      return {complement(kWord)};
    case 's':
      return {kSpace};
    case 'S':
      return {complement(kSpace)};
    case 'n':
      return single('\n');
    case 't':
      return single('\t');
    case 'r':
      return single('\r');
    case 'f':
      return single('\f');
    case 'v':
      return single('\v');
    case 'a':
      return single('\a');
    case 'x':
      return single(next_is('{') ? braced_hex(start) : hex_digits(start, 2));
    case 'u':
      return unicode_escape(start);
    case '0':
      if (!at_end() && is_digit(p_[i_])) fail(start, "octal escapes are not supported");
      return single(0);
    case 'b':
      if (in_class) return single('\b');  // backspace inside a class, in every dialect
      [[fallthrough]];
    case 'B':
      fail(start, "word boundaries (\\b \\B) are not supported");
    case 'k':
    case 'g':
      fail(start, "backreferences are not supported");
    case 'p':
    case 'P':
      fail(start, "unicode property escapes (\\p{{...}} \\P{{...}}) are not supported");
    case 'A':
    case 'Z':
    case 'z':
    case 'G':
      fail(start, "anchors \\A \\Z \\z \\G are not supported (the whole output always has to match)");
    default:
      if (is_digit(c)) fail(start, "backreferences are not supported");
      if (is_alnum(c)) fail(start, "unknown escape '\\{}'", c);
      --i_;  // an escaped punctuation or non-ASCII character stands for itself
      return single(code_point());
  }
}

// \uHHHH or \u{H..}; a surrogate pair \uD83D\uDE00 (how JSON text spells U+1F600) is one character.
Item Parser::unicode_escape(size_t start) {
  if (next_is('{')) return single(braced_hex(start));
  const uint32_t cp = hex_digits(start, 4);
  if (cp >= 0xD800 && cp <= 0xDBFF && next_is("\\u")) {
    const size_t low_start = i_;
    i_ += 2;
    const uint32_t low = i_ + 4 <= p_.size() ? hex_digits(low_start, 4) : 0;
    if (low >= 0xDC00 && low <= 0xDFFF) return single(0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00));
    i_ = low_start;
  }
  if (is_surrogate(cp)) fail(start, "\\u{:04X} is a lone surrogate, not a character", cp);
  return single(cp);
}

uint32_t Parser::hex_digits(size_t start, size_t count) {
  uint32_t value = 0;
  for (size_t k = 0; k < count; ++k, ++i_) {
    if (at_end() || !is_hex(p_[i_])) fail(start, "'{}' needs {} hex digits", p_.substr(start, 2), count);
    value = value * 16 + hex_value(p_[i_]);
  }
  return value;
}

// {H..}: 1 to 6 hex digits naming a code point (not a surrogate).
uint32_t Parser::braced_hex(size_t start) {
  const size_t open = ++i_;
  while (i_ < p_.size() && is_hex(p_[i_])) ++i_;
  if (!next_is('}') || i_ == open || i_ - open > 6)
    fail(start, "'{}{{' needs 1 to 6 hex digits and '}}'", p_.substr(start, 2));
  uint32_t cp = 0;
  for (char c : p_.substr(open, i_ - open)) cp = cp * 16 + hex_value(c);
  ++i_;  // '}'
  if (cp > kMaxCodePoint || is_surrogate(cp)) fail(start, "U+{:X} is not a character", cp);
  return cp;
}

// The UTF-8 character at i_; a pattern that is not valid UTF-8 has no meaning as a character regex.
uint32_t Parser::code_point() {
  const size_t start = i_;
  const auto lead = static_cast<uint8_t>(p_[i_++]);
  if (lead < 0x80) return lead;
  const int length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  uint32_t cp = lead & (0x7F >> length);
  for (int k = 1; k < length; ++k, ++i_) {
    if (at_end() || (static_cast<uint8_t>(p_[i_]) & 0xC0) != 0x80) fail(start, "invalid UTF-8 in the pattern");
    cp = (cp << 6) | (static_cast<uint8_t>(p_[i_]) & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};  // below: an overlong encoding
  if (length == 0 || lead > 0xF4 || cp < kSmallest[length] || cp > kMaxCodePoint || is_surrogate(cp))
    fail(start, "invalid UTF-8 in the pattern");
  return cp;
}

}  // namespace

Node parse(std::string_view pattern) { return Parser(pattern).parse(); }

}  // namespace drift::grammar::regex
