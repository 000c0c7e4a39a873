// The parser's token-stream helpers: matching and consuming operators and names, and syntax
// errors worded like jinja2's ("expected token ')', got 'end of print statement'").
#include <fmt/format.h>

#include "core/chat_template/parser_impl.h"

namespace drift::jinja {

bool Parser::at_operator(std::string_view op) const {
  return current().type == TokenType::kOperator && current().value == op;
}

bool Parser::at_name(std::string_view name) const {
  return current().type == TokenType::kName && current().value == name;
}

bool Parser::skip_operator(std::string_view op) {
  if (!at_operator(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

std::string Parser::describe(const Token& token) {
  switch (token.type) {
    case TokenType::kEof:
      return "end of template";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kData:
      return "template data";
    case TokenType::kString:
      return "string";
    default:
      return token.value;
  }
}

void Parser::fail(const std::string& message) const { throw JinjaError(ErrorType::kSyntax, message, current().line); }

void Parser::fail_unexpected(const std::string& expected) const {
  fail(fmt::format("expected {}, got '{}'", expected, describe(current())));
}

void Parser::expect_operator(std::string_view op) {
  if (!skip_operator(op)) fail_unexpected(fmt::format("token '{}'", op));
}

std::string Parser::expect_name() {
  if (current().type != TokenType::kName) fail_unexpected("name");
  return next().value;
}

ExprPtr Parser::make(ExprKind kind, int line) {
  auto node = std::make_unique<Expr>();
  node->kind = kind;
  node->line = line;
  return node;
}

}  // namespace drift::jinja
