#include "core/grammar/regex_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace drift::grammar {
namespace {

// Groups may nest this deep: parsing and translating recurse a few frames per level.
constexpr int kMaxDepth = 200;

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

// The parsed regex as grammar rules. Repetitions of a nullable item X need care: X* ::= X X* | ""
// would be left-recursive (X* reaches itself through an empty X), and X{m,n} would try every way of
// spreading "" over its copies -- for (x?){1000}, a thousand parse stacks per byte. So:
//  - X{m,} = X* = (Y1|...|Yk)* for the non-nullable pieces Yi of X (loop_items): one flat loop,
//    however deeply stars nest ((a*)*, (a|b*)+);
//  - X{m,n} = X'{0,n}, X' being X's non-empty strings (nonempty), and X itself when X is a star
//    already ((a*){2,3} = a*).
// A node needed both as itself and inside some X' is translated once (the maps below).
class Translator {
 public:
  Translator(GrammarBuilder& builder, std::string_view hint) : builder_(builder), hint_(hint) {}
  Sequence sequence(const Node& n);
  Symbol symbol(const Node& n);

 private:
  Sequence characters(const Node& n);
  Sequence repetition(const Node& n);
  std::optional<Symbol> loop_body(const Node& n);
  void loop_items(const Node& n, std::vector<const Node*>& out);
  std::optional<Symbol> nonempty(const Node& n);
  std::optional<Symbol> nonempty_uncached(const Node& n);
  std::optional<Symbol> nonempty_concat(const Node& n);
  Symbol one(Sequence seq) { return seq.size() == 1 ? seq[0] : builder_.choice({std::move(seq)}, hint_); }

  GrammarBuilder& builder_;
  std::string_view hint_;
  std::unordered_map<const Node*, Symbol> symbols_;
  std::unordered_map<const Node*, std::optional<Symbol>> nonempty_;
};

// A star (Y{m,} with Y nullable, or Y{0,}): it matches any concatenation of its own strings.
bool is_star(const Node& n) { return n.kind == Node::Kind::Repeat && !n.max && n.nullable; }

Sequence Translator::sequence(const Node& n) {
  if (auto it = symbols_.find(&n); it != symbols_.end()) return {it->second};
  switch (n.kind) {
    case Node::Kind::Empty:
      return {};
    case Node::Kind::Chars:
      return characters(n);
    case Node::Kind::Concat: {
      Sequence out;
      for (const Node& child : n.children) {
        const Sequence part = sequence(child);
        out.insert(out.end(), part.begin(), part.end());
      }
      return out;
    }
    case Node::Kind::Alt: {
      std::vector<Sequence> alternatives;
      for (const Node& child : n.children) alternatives.push_back(sequence(child));
      return {builder_.choice(std::move(alternatives), hint_)};
    }
    case Node::Kind::Repeat:
      return repetition(n);
  }
  return {};
}

// One symbol for the node: a repetition copies its item, so the item should be a single symbol.
Symbol Translator::symbol(const Node& n) {
  if (auto it = symbols_.find(&n); it != symbols_.end()) return it->second;
  const Symbol s = one(sequence(n));
  symbols_.emplace(&n, s);
  return s;
}

// A class whose UTF-8 form is one byte-range sequence (a literal, [a-z], [а-я]) is spliced in as
// bytes; others become a rule of alternatives.
Sequence Translator::characters(const Node& n) {
  const std::vector<std::vector<ByteRange>> encodings = utf8_sequences(n.ranges);
  if (encodings.size() != 1) return {builder_.characters(n.ranges, false, hint_)};
  Sequence out;
  for (ByteRange r : encodings[0]) {
    ByteSet set;
    set.add_range(r.first, r.last);
    out.push_back(builder_.bytes(set));
  }
  return out;
}

Sequence Translator::repetition(const Node& n) {
  const Node& item = n.children[0];
  if (n.max == 0) return {};
  if ((n.min == 1 && n.max == 1) || is_star(item)) return sequence(item);
  if (!item.nullable) return {builder_.repeat({symbol(item)}, n.min, n.max, hint_)};
  const std::optional<Symbol> once = n.max ? nonempty(item) : loop_body(item);
  if (!once) return {};  // the item matches only ""
  return {builder_.repeat({*once}, 0, n.max, hint_)};
}

// Y1|...|Yk with X* = (Y1|...|Yk)* and no Yi nullable; none when X matches only "".
std::optional<Symbol> Translator::loop_body(const Node& n) {
  std::vector<const Node*> items;
  loop_items(n, items);
  std::vector<Sequence> alternatives;
  for (const Node* item : items) alternatives.push_back({symbol(*item)});
  if (alternatives.size() <= 1) return alternatives.empty() ? std::nullopt : std::optional(alternatives[0][0]);
  return builder_.choice(std::move(alternatives), hint_);
}

// For nullable A and B, (A|B)* = (A*|B*)*, (AB)* = (A|B)* (A and B are in AB, AB is in (A|B)*),
// and A{m,n}* = A* when n >= 1: down to the non-nullable pieces.
void Translator::loop_items(const Node& n, std::vector<const Node*>& out) {
  if (!n.nullable) {
    out.push_back(&n);
    return;
  }
  if (n.kind == Node::Kind::Repeat && n.max == 0) return;
  for (const Node& child : n.children) loop_items(child, out);
}

std::optional<Symbol> Translator::nonempty(const Node& n) {
  if (!n.nullable) return symbol(n);
  if (auto it = nonempty_.find(&n); it != nonempty_.end()) return it->second;
  const std::optional<Symbol> s = nonempty_uncached(n);
  nonempty_.emplace(&n, s);
  return s;
}

// X' for a nullable X; none when X matches only "".
std::optional<Symbol> Translator::nonempty_uncached(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Alt: {  // (A|B)' = A'|B'
      std::vector<Sequence> alternatives;
      for (const Node& child : n.children)
        if (const std::optional<Symbol> s = nonempty(child)) alternatives.push_back({*s});
      if (alternatives.size() <= 1) return alternatives.empty() ? std::nullopt : std::optional(alternatives[0][0]);
      return builder_.choice(std::move(alternatives), hint_);
    }
    case Node::Kind::Repeat: {
      const Node& item = n.children[0];
      if (n.max == 0) return std::nullopt;
      if (is_star(item)) return nonempty(item);  // (Y*){0,n} = Y*
      // X* = L* gives X' = L+; Y{m,n} = Y'{0,n} gives Y{m,n}' = Y'{1,n}.
      const std::optional<Symbol> once = n.max ? nonempty(item) : loop_body(item);
      if (!once) return std::nullopt;
      return builder_.repeat({*once}, 1, n.max, hint_);
    }
    case Node::Kind::Concat:
      return nonempty_concat(n);
    default:  // Empty (a Chars node is never nullable)
      return std::nullopt;
  }
}

// (A1 A2 ... An)' with every Ai nullable: the first non-empty Ai starts it, so it is
// A1' A2...An | A2' A3...An | ... | An'. Built from the right with shared suffix rules (linear
// size); each Ai' is made before Ai so that Ai's translation reuses what Ai' made of its children.
std::optional<Symbol> Translator::nonempty_concat(const Node& n) {
  std::optional<Symbol> tail;  // (Ai+1...An)'
  Sequence suffix;             // Ai+1...An, at most one symbol
  for (auto child = n.children.rbegin(); child != n.children.rend(); ++child) {
    std::vector<Sequence> alternatives;
    if (const std::optional<Symbol> first = nonempty(*child)) {
      Sequence alt = {*first};
      alt.insert(alt.end(), suffix.begin(), suffix.end());
      alternatives.push_back(std::move(alt));
    }
    if (tail) alternatives.push_back({*tail});
    if (!alternatives.empty()) tail = builder_.choice(std::move(alternatives), hint_);
    Sequence whole = {symbol(*child)};
    whole.insert(whole.end(), suffix.begin(), suffix.end());
    suffix = {one(std::move(whole))};
  }
  return tail;
}

}  // namespace

Symbol regex_symbol(GrammarBuilder& builder, std::string_view pattern, std::string_view hint) {
  const Node tree = Parser(pattern).parse();  // parse first: a bad pattern leaves `builder` untouched
  return Translator(builder, hint).symbol(tree);
}

Grammar regex_grammar(std::string_view pattern) {
  GrammarBuilder builder;
  const Symbol regex = regex_symbol(builder, pattern, "regex");
  const int32_t root = builder.named("root");
  builder.define(root, {{regex}});
  return std::move(builder).build(root);
}

}  // namespace drift::grammar
