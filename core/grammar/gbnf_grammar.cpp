#include "core/grammar/gbnf_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/tokenizer/utf8.h"

// Two passes: the text is parsed into rules of items first, and only then compiled. Every named
// rule then gets its builder index before any anonymous rule exists, so a reference can never
// land on an anonymous rule that happens to share its name (GrammarBuilder::named looks names
// up among all rules), and an undefined reference is reported where it is written.
//
// Differences from llama.cpp's parser (src/llama-grammar.cpp), all on text it would refuse or
// would read in a way nobody means: `_` in names; `{,n}`; a second definition of a rule is an
// error (llama.cpp keeps the last); a reversed range [z-a] is an error (llama.cpp's matches
// nothing); `[]` is an error and `[^]` any character (llama.cpp reads both as matching the empty
// string); counts past kMaxGbnfRepetition are refused (llama.cpp refuses a minimum past 2000 and
// reads a larger maximum as unbounded); escapes naming no character (past U+10FFFF, or a
// surrogate in a literal) and invalid UTF-8 are errors; tokens are not supported.

namespace drift::grammar {
namespace {

struct Item;
using Alternatives = std::vector<std::vector<Item>>;

// One symbol of a rule body, as written.
struct Item {
  enum class Kind { Literal, Class, Any, Ref, Group, Repeat };
  Kind kind = Kind::Literal;
  size_t offset = 0;                   // where it starts in the text, for errors
  std::string text;                    // Literal: its UTF-8 bytes; Ref: the name
  std::vector<CodePointRange> ranges;  // Class
  bool negated = false;                // Class
  Alternatives alternatives;           // Group; Repeat: {{the repeated item}}
  int64_t min = 0;                     // Repeat
  std::optional<int64_t> max;          // Repeat; none: unbounded
  int depth = 1;                       // levels of groups and repetitions, this one included
};

// (A function, not designated initializers: GCC's -Wextra flags every member they leave out.)
Item make_item(Item::Kind kind, size_t offset) {
  Item item;
  item.kind = kind;
  item.offset = offset;
  return item;
}

struct RuleDef {
  std::string name;
  size_t offset = 0;
  Alternatives alternatives;
};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// "line:column" of a byte offset; columns count characters, not bytes, as editors do.
std::string location(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<uint8_t>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return fmt::format("{}:{}", line, column);
}

[[noreturn]] void fail_at(std::string_view text, size_t offset, std::string_view problem) {
  throw GrammarError(fmt::format("grammar {}: {}", location(text, offset), problem));
}

// A character quoted for an error message; control and non-ASCII bytes as hex.
std::string quoted(char c) {
  const auto b = static_cast<uint8_t>(c);
  return b >= 0x20 && b < 0x7F ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02X}", b);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_surrogate(uint32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Recursive descent over the text, following llama.cpp's layout rules: spaces, tabs and comments
// separate symbols anywhere; a newline does only inside parentheses and right after `::=` or `|`,
// so at the top level it ends the rule.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::vector<RuleDef> parse() {
    std::vector<RuleDef> rules;
    skip_space(true);
    while (!at_end()) rules.push_back(parse_rule());
    return rules;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  [[noreturn]] void fail(size_t offset, std::string_view problem) const { fail_at(text_, offset, problem); }

  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (is_name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  RuleDef parse_rule() {
    RuleDef rule;
    rule.offset = pos_;
    rule.name = parse_name();
    if (rule.name.empty()) fail(pos_, unexpected_rule_start());
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail(pos_, fmt::format("expected '::=' after rule name '{}'", rule.name));
    pos_ += 3;
    skip_space(true);
    rule.alternatives = parse_alternatives(false);
    end_rule();
    return rule;
  }

  std::string unexpected_rule_start() const {
    if (peek() == '|')
      return "expected a rule name, found '|' (a rule continues on the next line only after a trailing '|' or "
             "inside parentheses)";
    return fmt::format("expected a rule name, found {}", quoted(peek()));
  }

  // The rule must end at a newline or the end of the text.
  void end_rule() {
    if (text_.substr(pos_, 2) == "\r\n")
      pos_ += 2;
    else if (peek() == '\r' || peek() == '\n')
      ++pos_;
    else if (!at_end())
      fail(pos_, unexpected_here());
    skip_space(true);
  }

  // What stopped a rule body or group at something that is neither a symbol nor its end.
  std::string unexpected_here() const {
    if (peek() == ')') return "unmatched ')'";
    if (text_.substr(pos_, 3) == "::=")
      return "'::=' inside a rule body (a rule must start on a new line, after a complete rule)";
    if (peek() == '<' || peek() == '!')
      return "tokens (<...>, <[id]>, !<...>) are not supported: the grammar matches text, not token ids";
    return fmt::format("unexpected {}", quoted(peek()));
  }

  Alternatives parse_alternatives(bool nested) {
    Alternatives alternatives;  // (pushed, not braced: an initializer list would copy the items)
    alternatives.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested));
    }
    return alternatives;
  }

  std::vector<Item> parse_sequence(bool nested) {
    std::vector<Item> items;
    while (parse_item(items)) skip_space(nested);
    return items;
  }

  // Appends the item at the cursor (or wraps the last one in a repetition); false where none starts.
  bool parse_item(std::vector<Item>& items) {
    const char c = peek();
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      parse_repetition(items);
      return true;
    }
    std::optional<Item> item = parse_symbol(c);
    if (item) items.push_back(std::move(*item));
    return item.has_value();
  }

  std::optional<Item> parse_symbol(char c) {
    if (c == '"') return parse_literal();
    if (c == '[') return parse_class();
    if (c == '(') return parse_group();
    if (c == '.') return make_item(Item::Kind::Any, pos_++);
    if (!is_name_char(c)) return std::nullopt;
    Item item = make_item(Item::Kind::Ref, pos_);
    item.text = parse_name();
    return item;
  }

  Item parse_literal() {
    Item item = make_item(Item::Kind::Literal, pos_++);
    while (peek() != '"') {
      if (at_end()) fail(item.offset, "unterminated string");
      const size_t at = pos_;
      const uint32_t cp = parse_char();
      if (is_surrogate(cp)) fail(at, fmt::format("U+{:04X} is a surrogate, not a character", cp));
      utf8::append_code_point(item.text, cp);
    }
    ++pos_;
    return item;
  }

  Item parse_class() {
    Item item = make_item(Item::Kind::Class, pos_++);
    if (peek() == '^') {
      item.negated = true;
      ++pos_;
    }
    while (peek() != ']') {
      if (at_end()) fail(item.offset, "unterminated character class");
      item.ranges.push_back(parse_range());
    }
    ++pos_;
    if (item.ranges.empty() && !item.negated) fail(item.offset, "empty character class");
    return item;
  }

  // `c` or `c-d`; a '-' just before the closing ']' is a plain character, as in llama.cpp.
  CodePointRange parse_range() {
    const size_t start = pos_;
    const uint32_t first = parse_char();
    if (peek() != '-' || peek(1) == ']' || pos_ + 1 >= text_.size()) return {first, first};
    ++pos_;
    const uint32_t last = parse_char();
    if (last < first) fail(start, fmt::format("reversed range U+{:04X}-U+{:04X}", first, last));
    return {first, last};
  }

  Item parse_group() {
    Item item = make_item(Item::Kind::Group, pos_++);
    // Checked on the way in too: the parser recurses per '(' before any depth is known.
    if (++open_groups_ > kMaxGbnfNesting) fail(item.offset, too_deep());
    skip_space(true);
    item.alternatives = parse_alternatives(true);
    if (at_end()) fail(item.offset, "unclosed '('");
    if (peek() != ')') fail(pos_, unexpected_here());
    ++pos_;
    --open_groups_;
    for (const auto& items : item.alternatives)
      for (const Item& inner : items) item.depth = std::max(item.depth, inner.depth + 1);
    if (item.depth > kMaxGbnfNesting) fail(item.offset, too_deep());
    return item;
  }

  static std::string too_deep() {
    return fmt::format("groups and repetitions nest more than {} deep", kMaxGbnfNesting);
  }

  // `*`, `+`, `?` or `{...}` after an item: the item becomes its repetition (repetitions stack,
  // "a"{2}? being ("a"{2})?, as in llama.cpp).
  void parse_repetition(std::vector<Item>& items) {
    Item item = make_item(Item::Kind::Repeat, pos_);
    if (items.empty()) fail(pos_, fmt::format("'{}' must follow something to repeat", peek()));
    const char c = text_[pos_++];
    if (c == '{') {
      parse_counts(item);
    } else {
      item.min = c == '+' ? 1 : 0;
      if (c == '?') item.max = 1;
    }
    item.depth = items.back().depth + 1;
    if (item.depth > kMaxGbnfNesting) fail(item.offset, too_deep());
    item.alternatives.emplace_back();
    item.alternatives[0].push_back(std::move(items.back()));
    items.back() = std::move(item);
  }

  // {m} {m,} {m,n} {,n}, spaces allowed inside as llama.cpp allows them.
  void parse_counts(Item& item) {
    skip_space(false);
    const bool has_min = peek() >= '0' && peek() <= '9';
    if (has_min) item.min = parse_count();
    skip_space(false);
    if (peek() == '}' && has_min) {
      item.max = item.min;
    } else {
      if (peek() != ',') fail(pos_, has_min ? "expected ',' or '}' in a repetition" : "expected a count after '{'");
      ++pos_;
      skip_space(false);
      if (peek() >= '0' && peek() <= '9')
        item.max = parse_count();
      else if (!has_min)
        fail(pos_, "expected a count after '{,'");
      skip_space(false);
      if (peek() != '}') fail(pos_, "expected '}' to close the repetition");
    }
    ++pos_;
    if (item.max && *item.max < item.min)
      fail(item.offset, fmt::format("repetition {{{},{}}} has its maximum below its minimum", item.min, *item.max));
  }

  int64_t parse_count() {
    const size_t start = pos_;
    int64_t value = 0;
    for (; peek() >= '0' && peek() <= '9'; ++pos_)
      value = std::min<int64_t>(value * 10 + (peek() - '0'), kMaxGbnfRepetition + 1);  // no overflow
    if (value > kMaxGbnfRepetition)
      fail(start, fmt::format("repetition count {} is over the limit of {}", text_.substr(start, pos_ - start),
                              kMaxGbnfRepetition));
    return value;
  }

  // One character of a literal or class: an escape or a UTF-8 encoded character.
  uint32_t parse_char() {
    if (peek() == '\\') return parse_escape();
    return parse_utf8();
  }

  uint32_t parse_escape() {
    const size_t start = pos_++;
    if (at_end()) fail(start, "'\\' at the end of the text");
    const char c = text_[pos_++];
    switch (c) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
        return static_cast<uint8_t>(c);
      case 'x':
        return parse_hex(start, 2);
      case 'u':
        return parse_hex(start, 4);
      case 'U':
        return parse_hex(start, 8);
      default:
        fail(start, fmt::format("bad escape '\\{}'", c));
    }
  }

  uint32_t parse_hex(size_t start, int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      const int digit = hex_digit(peek());
      if (digit < 0) fail(start, fmt::format("expected {} hex digits after '\\{}'", digits, text_[start + 1]));
      value = value << 4 | static_cast<uint32_t>(digit);
    }
    if (value > kMaxCodePoint) fail(start, fmt::format("U+{:X} is past U+10FFFF", value));
    return value;
  }

  // A strictly decoded UTF-8 character: classes need code points, and a literal's bytes must be
  // ones a model's text can hold.
  uint32_t parse_utf8() {
    const size_t start = pos_;
    const auto lead = static_cast<uint8_t>(text_[pos_++]);
    if (lead < 0x80) return lead;
    const int length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
    if (length == 0 || lead > 0xF4) fail(start, "invalid UTF-8");
    uint32_t cp = lead & (0x7F >> length);
    for (int i = 1; i < length; ++i, ++pos_) {
      if (at_end() || (static_cast<uint8_t>(peek()) & 0xC0) != 0x80) fail(start, "invalid UTF-8");
      cp = cp << 6 | (static_cast<uint8_t>(peek()) & 0x3F);
    }
    static constexpr uint32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinOfLength[length] || cp > kMaxCodePoint || is_surrogate(cp)) fail(start, "invalid UTF-8");
    return cp;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int open_groups_ = 0;
};

// The parsed rules into a GrammarBuilder.
class Compiler {
 public:
  Compiler(std::string_view text, const std::vector<RuleDef>& rules) : text_(text), rules_(rules) {}

  Grammar compile() {
    declare();
    const auto root = ids_.find("root");
    if (root == ids_.end()) throw GrammarError("grammar: no 'root' rule (the grammar starts at the rule named root)");
    for (const RuleDef& rule : rules_) {
      hint_ = anonymous_hint(rule.name);
      builder_.define(ids_.at(rule.name), alternatives(rule.alternatives));
    }
    try {
      return std::move(builder_).build(root->second);
    } catch (const GrammarError& e) {
      throw GrammarError(fmt::format("grammar: {}", e.what()));
    }
  }

 private:
  [[noreturn]] void fail(size_t offset, std::string_view problem) const { fail_at(text_, offset, problem); }

  // Every rule's index, before any anonymous rule exists (see the top of this file).
  void declare() {
    std::unordered_map<std::string, size_t> first;
    for (const RuleDef& rule : rules_) {
      const auto [it, inserted] = first.try_emplace(rule.name, rule.offset);
      if (!inserted)
        fail(rule.offset,
             fmt::format("rule '{}' is defined twice (first at {})", rule.name, location(text_, it->second)));
      ids_[rule.name] = builder_.named(rule.name);
    }
    for (const auto& [name, id] : ids_) taken_prefixes_.insert(prefix_before_number(name));
  }

  // "x" for a name "x-<digits>", else "" -- the hints whose anonymous rules ("<hint>-<n>") could
  // print like a named rule in to_gbnf.
  static std::string prefix_before_number(const std::string& name) {
    const size_t dash = name.find_last_of('-');
    if (dash == std::string::npos || dash + 1 == name.size()) return "";
    if (name.find_first_not_of("0123456789", dash + 1) != std::string::npos) return "";
    return name.substr(0, dash);
  }

  std::string anonymous_hint(std::string hint) const {
    while (taken_prefixes_.count(hint)) hint += '-';
    return hint;
  }

  std::vector<Sequence> alternatives(const Alternatives& alternatives) {
    std::vector<Sequence> out;
    for (const auto& items : alternatives) out.push_back(sequence(items));
    return out;
  }

  Sequence sequence(const std::vector<Item>& items) {
    Sequence out;
    for (const Item& item : items) append(item, out);
    return out;
  }

  void append(const Item& item, Sequence& out) {
    switch (item.kind) {
      case Item::Kind::Literal: {
        const Sequence bytes = builder_.literal(item.text);
        out.insert(out.end(), bytes.begin(), bytes.end());
        return;
      }
      case Item::Kind::Class:
        out.push_back(characters(item));
        return;
      case Item::Kind::Any:
        out.push_back(any_character());
        return;
      case Item::Kind::Ref:
        out.push_back(reference(item));
        return;
      case Item::Kind::Group:
        return group(item, out);
      case Item::Kind::Repeat:
        out.push_back(repeat(item));
        return;
    }
  }

  Symbol characters(const Item& item) {
    try {
      return builder_.characters(item.ranges, item.negated, hint_);
    } catch (const GrammarError& e) {  // e.g. [^\x00-\U0010FFFF], which holds no character
      fail(item.offset, e.what());
    }
  }

  // `.` is one shared rule: it spells out all of Unicode's UTF-8 forms.
  Symbol any_character() {
    if (!any_) any_ = builder_.characters({{0, kMaxCodePoint}}, false, anonymous_hint("any-char"));
    return *any_;
  }

  Symbol reference(const Item& item) {
    const auto it = ids_.find(item.text);
    if (it == ids_.end()) fail(item.offset, fmt::format("rule '{}' is used but never defined", item.text));
    return GrammarBuilder::ref(it->second);
  }

  // A one-alternative group is spliced in; others become an anonymous rule.
  void group(const Item& item, Sequence& out) {
    if (item.alternatives.size() == 1) {
      const Sequence inner = sequence(item.alternatives[0]);
      out.insert(out.end(), inner.begin(), inner.end());
      return;
    }
    out.push_back(builder_.choice(alternatives(item.alternatives), hint_));
  }

  Symbol repeat(const Item& item) {
    expansion_ += item.max ? *item.max : item.min + 1;
    if (expansion_ > kMaxGbnfExpansion)
      fail(item.offset, fmt::format("the grammar's repetitions expand to over {} copies", kMaxGbnfExpansion));
    Sequence body = sequence(item.alternatives[0]);
    // Repetition copies its item; a longer item is one rule so each copy is one symbol.
    if (body.size() > 1) body = {builder_.choice({body}, hint_)};
    return builder_.repeat(body, item.min, item.max, hint_);
  }

  std::string_view text_;
  const std::vector<RuleDef>& rules_;
  GrammarBuilder builder_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_set<std::string> taken_prefixes_;
  std::string hint_;  // names the anonymous rules of the rule being compiled
  std::optional<Symbol> any_;
  int64_t expansion_ = 0;
};

}  // namespace

Grammar gbnf_grammar(std::string_view text) {
  const std::vector<RuleDef> rules = Parser(text).parse();
  return Compiler(text, rules).compile();
}

}  // namespace drift::grammar
