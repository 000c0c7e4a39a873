#pragma once
// The template lexer: splits source into template data and the tokens inside {{ }}, {% %}
// (comments {# #} are dropped), with jinja2's whitespace control exactly as transformers
// configures it: trim_blocks (a block or comment tag eats one following newline), lstrip_blocks
// (whitespace before a block or comment tag on its own line is dropped), "-" (strip all
// whitespace on that side) and "+" (keep it); {% raw %} bodies stay data; one trailing newline of
// the source is dropped (keep_trailing_newline is off).
#include <cstdint>
#include <string>
#include <vector>

namespace drift::jinja {

enum class TokenType {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;  // data text, name, unescaped string literal, operator text
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

// Throws JinjaError (kSyntax) with the line for an unterminated tag, an unknown character or a
// bad string escape.
std::vector<Token> tokenize(const std::string& source);

}  // namespace drift::jinja
