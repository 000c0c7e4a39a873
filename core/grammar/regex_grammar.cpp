#include "core/grammar/regex_grammar.h"

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/grammar/regex_parser.h"

namespace drift::grammar {
namespace {

using regex::Node;

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
  const Node tree = regex::parse(pattern);  // parse first: a bad pattern leaves `builder` untouched
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
