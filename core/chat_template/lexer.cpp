#include "core/chat_template/lexer.h"

#include <array>
#include <cctype>
#include <string_view>

#include <fmt/format.h>

#include "core/chat_template/jinja_error.h"
#include "core/chat_template/py_text.h"

namespace drift::jinja {
namespace {

// Operators, longest first so "//" wins over "/".
constexpr std::array<std::string_view, 26> kOperators = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                                         "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                                         ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// \r\n and \r become \n; one trailing newline goes (jinja2 without keep_trailing_newline).
std::string normalize_newlines(const std::string& source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Python string-literal escapes (jinja2 decodes literals with "unicode-escape").
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out.push_back(body[i]);
      continue;
    }
    const char c = body[++i];
    auto hex = [&](int digits) {
      if (i + digits >= body.size()) throw JinjaError(ErrorType::kSyntax, "truncated escape in string literal", line);
      char32_t v = 0;
      for (int k = 0; k < digits; ++k) {
        const char h = body[++i];
        if (!std::isxdigit(static_cast<unsigned char>(h)))
          throw JinjaError(ErrorType::kSyntax, "truncated escape in string literal", line);
        v = v * 16 +
            static_cast<char32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      }
      append_code_point(out, v);
    };
    switch (c) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        out.push_back(c);
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      default:
        if (c >= '0' && c <= '7') {
          char32_t v = static_cast<char32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            v = v * 8 + static_cast<char32_t>(body[++i] - '0');
          append_code_point(out, v);
        } else {
          out.push_back('\\');  // Python keeps unknown escapes as written
          out.push_back(c);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    tokens_.push_back(Token{TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw JinjaError(ErrorType::kSyntax, message, line_); }

  bool at(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  size_t skip_whitespace(size_t p) const {
    while (p < src_.size()) {
      size_t q = p;
      if (!py_isspace(decode_code_point(src_, q))) break;
      p = q;
    }
    return p;
  }

  void emit(TokenType type, std::string value) { tokens_.push_back(Token{type, std::move(value), line_}); }

  // Advances over src_[pos_, end), counting lines; line_starting_ follows the last character.
  void consume_to(size_t end) {
    line_ += count_newlines(std::string_view(src_).substr(pos_, end - pos_));
    if (end > pos_) line_starting_ = src_[end - 1] == '\n';
    pos_ = end;
  }

  // Text before a tag, with "-" stripping or lstrip_blocks applied, as jinja2's OptionalLStrip.
  void emit_text(size_t tag, char sign, bool variable) {
    std::string text = src_.substr(pos_, tag - pos_);
    if (sign == '-') {
      text = py_strip(text, std::nullopt, false, true);
    } else if (sign != '+' && !variable) {
      const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
      if (line_start > 0 || line_starting_) {
        const std::string tail = text.substr(line_start);
        if (!tail.empty() && py_strip(tail, std::nullopt, true, true).empty()) text.resize(line_start);
      }
    }
    if (!text.empty()) emit(TokenType::kData, std::move(text));
  }

  // End of a {% raw %} opening tag at `p` (just after "{%" and its sign), or npos.
  size_t raw_begin_end(size_t p) const {
    p = skip_whitespace(p);
    if (!at(p, "raw")) return std::string::npos;
    p = skip_whitespace(p + 3);
    if (at(p, "-%}")) return skip_whitespace(p + 3);
    if (at(p, "%}")) return p + 2;
    return std::string::npos;
  }

  void lex_root() {
    size_t tag = pos_;
    while ((tag = src_.find('{', tag)) != std::string::npos) {
      if (tag + 1 < src_.size() && (src_[tag + 1] == '{' || src_[tag + 1] == '%' || src_[tag + 1] == '#')) break;
      ++tag;
    }
    if (tag == std::string::npos) {
      emit(TokenType::kData, src_.substr(pos_));
      consume_to(src_.size());
      return;
    }
    const char kind = src_[tag + 1];
    const char sign = tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+') ? src_[tag + 2] : 0;
    const size_t after = tag + 2 + (sign ? 1 : 0);
    const size_t raw_end = kind == '%' ? raw_begin_end(after) : std::string::npos;
    emit_text(tag, sign, kind == '{');
    consume_to(after);
    line_starting_ = false;
    if (raw_end != std::string::npos) {
      consume_to(raw_end);
      lex_raw();
    } else if (kind == '#') {
      lex_comment();
    } else {
      lex_tag(kind == '%');
    }
  }

  void lex_comment() {
    for (size_t p = pos_; p < src_.size(); ++p) {
      if (at(p, "+#}")) return consume_to(p + 3);
      if (at(p, "-#}")) return consume_to(skip_whitespace(p + 3));
      if (at(p, "#}")) return consume_to(p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n' ? 1 : 0));
    }
    fail("Missing end of comment tag");
  }

  void lex_raw() {
    for (size_t p = pos_; p < src_.size(); ++p) {
      if (!at(p, "{%")) continue;
      const char sign = p + 2 < src_.size() && (src_[p + 2] == '-' || src_[p + 2] == '+') ? src_[p + 2] : 0;
      size_t q = skip_whitespace(p + 2 + (sign ? 1 : 0));
      if (!at(q, "endraw")) continue;
      q = skip_whitespace(q + 6);
      size_t end;
      if (at(q, "+%}")) {
        end = q + 3;
      } else if (at(q, "-%}")) {
        end = skip_whitespace(q + 3);
      } else if (at(q, "%}")) {
        end = q + 2 + (q + 2 < src_.size() && src_[q + 2] == '\n' ? 1 : 0);
      } else {
        continue;
      }
      emit_text(p, sign, false);
      consume_to(end);
      return;
    }
    fail("Missing end of raw directive");
  }

  // The end of the tag at pos_ when one starts there: "+%}", "-%}" + whitespace, "%}" + one
  // newline (trim_blocks); "-}}" + whitespace, "}}".
  size_t tag_end(bool block) const {
    if (block) {
      if (at(pos_, "+%}")) return pos_ + 3;
      if (at(pos_, "-%}")) return skip_whitespace(pos_ + 3);
      if (at(pos_, "%}")) return pos_ + 2 + (pos_ + 2 < src_.size() && src_[pos_ + 2] == '\n' ? 1 : 0);
      return std::string::npos;
    }
    if (at(pos_, "-}}")) return skip_whitespace(pos_ + 3);
    if (at(pos_, "}}")) return pos_ + 2;
    return std::string::npos;
  }

  void lex_tag(bool block) {
    emit(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "");
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size())
        fail(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
      if (balance.empty()) {
        const size_t end = tag_end(block);
        if (end != std::string::npos) {
          emit(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "");
          consume_to(end);
          return;
        }
      }
      const size_t ws = skip_whitespace(pos_);
      if (ws != pos_) {
        consume_to(ws);
        continue;
      }
      lex_expression_token(balance);
    }
  }

  void lex_expression_token(std::vector<char>& balance) {
    const char c = src_[pos_];
    if (is_digit(c) && lex_number()) return;
    if (is_name_start(c)) {
      size_t end = pos_;
      while (end < src_.size() && is_name_char(src_[end])) ++end;
      emit(TokenType::kName, src_.substr(pos_, end - pos_));
      return consume_to(end);
    }
    if (c == '\'' || c == '"') return lex_string(c);
    for (std::string_view op : kOperators) {
      if (!at(pos_, op)) continue;
      track_balance(op, balance);
      emit(TokenType::kOperator, std::string(op));
      return consume_to(pos_ + op.size());
    }
    fail(fmt::format("unexpected char '{}' at {}", c, pos_));
  }

  void track_balance(std::string_view op, std::vector<char>& balance) {
    if (op == "{" || op == "(" || op == "[") {
      balance.push_back(op == "{" ? '}' : op == "(" ? ')' : ']');
    } else if (op == "}" || op == ")" || op == "]") {
      if (balance.empty()) fail(fmt::format("unexpected '{}'", op));
      if (balance.back() != op[0]) fail(fmt::format("unexpected '{}', expected '{}'", op, balance.back()));
      balance.pop_back();
    }
  }

  // Digits with optional "_" separators from `p`; returns the end.
  size_t digits(size_t p) const {
    size_t q = p;
    while (q < src_.size() &&
           (is_digit(src_[q]) || (src_[q] == '_' && q > p && q + 1 < src_.size() && is_digit(src_[q + 1]))))
      ++q;
    return q;
  }

  bool lex_number() {
    const bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    const size_t int_end = digits(pos_);
    size_t end = int_end;
    bool is_float = false;
    if (!after_dot) {
      size_t p = int_end;
      if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
        p = digits(p + 1);
        is_float = true;
      }
      if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
        size_t q = p + 1;
        if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
        if (q < src_.size() && is_digit(src_[q])) {
          p = digits(q);
          is_float = true;
        }
      }
      if (is_float) end = p;
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i)
      if (src_[i] != '_') text.push_back(src_[i]);
    if (is_float) {
      Token t{TokenType::kFloat, text, line_};
      t.float_value = std::stod(text);
      tokens_.push_back(t);
      consume_to(end);
      return true;
    }
    return lex_integer();
  }

  // Matches (_?X)* from `p` where X satisfies `ok`; returns the end.
  template <typename Pred>
  size_t separated_run(size_t p, Pred ok) const {
    while (p < src_.size()) {
      if (src_[p] == '_' && p + 1 < src_.size() && ok(src_[p + 1])) {
        p += 2;
      } else if (ok(src_[p])) {
        ++p;
      } else {
        break;
      }
    }
    return p;
  }

  // jinja2's integer_re, alternatives in its order: 0b.., 0o.., 0x.., [1-9](_?\d)*, 0(_?0)*.
  bool lex_integer() {
    const size_t p = pos_;
    const char prefix =
        p + 1 < src_.size() ? static_cast<char>(std::tolower(static_cast<unsigned char>(src_[p + 1]))) : 0;
    const int base = src_[p] != '0' ? 10 : prefix == 'b' ? 2 : prefix == 'o' ? 8 : prefix == 'x' ? 16 : 0;
    auto digit_value = [](char d) {
      return std::isdigit(static_cast<unsigned char>(d)) ? d - '0'
                                                         : std::tolower(static_cast<unsigned char>(d)) - 'a' + 10;
    };
    auto in_base = [&](int b) {
      return [&digit_value, b](char d) { return std::isxdigit(static_cast<unsigned char>(d)) && digit_value(d) < b; };
    };
    size_t start = p;
    size_t end = p;
    if (base == 2 || base == 8 || base == 16) {
      start = p + 2;
      end = separated_run(start, in_base(base));
      if (end == start) end = start = p;  // "0x" without digits: just the zero
    }
    int effective = base;
    if (end == p) {
      effective = 10;
      end = src_[p] == '0' ? separated_run(p + 1, [](char d) { return d == '0'; }) : separated_run(p + 1, is_digit);
    }
    int64_t value = 0;
    for (size_t i = start; i < end; ++i)
      if (src_[i] != '_') value = value * effective + digit_value(src_[i]);
    Token t{TokenType::kInteger, src_.substr(pos_, end - pos_), line_};
    t.int_value = value;
    tokens_.push_back(t);
    consume_to(end);
    return true;
  }

  void lex_string(char quote) {
    size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) p += src_[p] == '\\' ? 2 : 1;
    if (p >= src_.size()) fail(fmt::format("unexpected char '{}' at {}", quote, pos_));
    emit(TokenType::kString, unescape(std::string_view(src_).substr(pos_ + 1, p - pos_ - 1), line_));
    consume_to(p + 1);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace drift::jinja
