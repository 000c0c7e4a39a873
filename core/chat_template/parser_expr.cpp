// Expression parsing, following jinja2's Parser method by method (parse_condexpr, parse_or, ...,
// parse_unary, parse_primary, parse_postfix, parse_filter_expr) so precedence matches exactly.
#include <fmt/format.h>

#include "core/chat_template/parser_impl.h"

namespace drift::jinja {

ExprPtr Parser::parse_expression(bool with_condition) {
  ExprPtr expr = parse_or();
  if (!with_condition) return expr;
  while (at_name("if")) {
    const int line = next().line;
    ExprPtr condition = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_expression() : nullptr;
    ExprPtr node = make(ExprKind::kCondition, line);
    node->children.push_back(std::move(expr));
    node->children.push_back(std::move(condition));
    node->children.push_back(std::move(otherwise));
    expr = std::move(node);
  }
  return expr;
}

bool Parser::at_tuple_end(std::initializer_list<std::string_view> end_names) const {
  const TokenType t = current().type;
  if (t == TokenType::kVariableEnd || t == TokenType::kBlockEnd || t == TokenType::kEof || at_operator(")"))
    return true;
  for (std::string_view name : end_names)
    if (at_name(name)) return true;
  return false;
}

ExprPtr Parser::parse_tuple(bool with_condition, std::initializer_list<std::string_view> end_names,
                            bool explicit_parens) {
  const int line = current().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_operator(",");
    if (at_tuple_end(end_names)) break;
    items.push_back(parse_expression(with_condition));
    if (!at_operator(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parens) fail(fmt::format("Expected an expression, got '{}'", describe(current())));
  }
  ExprPtr node = make(ExprKind::kTuple, line);
  node->children = std::move(items);
  return node;
}

namespace {

ExprPtr binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
  auto node = std::make_unique<Expr>();
  node->kind = kind;
  node->line = line;
  node->name = std::move(op);
  node->children.push_back(std::move(left));
  node->children.push_back(std::move(right));
  return node;
}

}  // namespace

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    const int line = next().line;
    left = binary(ExprKind::kOr, "or", std::move(left), parse_and(), line);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    const int line = next().line;
    left = binary(ExprKind::kAnd, "and", std::move(left), parse_not(), line);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (!at_name("not")) return parse_compare();
  const NestingGuard guard(*this);
  ExprPtr node = make(ExprKind::kUnary, next().line);
  node->name = "not";
  node->children.push_back(parse_not());
  return node;
}

ExprPtr Parser::parse_compare() {
  const int line = current().line;
  ExprPtr first = parse_math1();
  ExprPtr node;
  while (true) {
    std::string op;
    if (current().type == TokenType::kOperator && (at_operator("==") || at_operator("!=") || at_operator("<") ||
                                                   at_operator("<=") || at_operator(">") || at_operator(">="))) {
      op = next().value;
    } else if (at_name("in")) {
      next();
      op = "in";
    } else if (at_name("not") && peek().type == TokenType::kName && peek().value == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!node) {
      node = make(ExprKind::kCompare, line);
      node->children.push_back(std::move(first));
    }
    node->ops.push_back(op);
    node->children.push_back(parse_math1());
  }
  return node ? std::move(node) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (at_operator("+") || at_operator("-")) {
    const Token& op = next();
    left = binary(ExprKind::kBinary, op.value, std::move(left), parse_concat(), op.line);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (at_operator("~")) {
    const int line = next().line;
    left = binary(ExprKind::kBinary, "~", std::move(left), parse_math2(), line);
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
    const Token& op = next();
    left = binary(ExprKind::kBinary, op.value, std::move(left), parse_pow(), op.line);
  }
  return left;
}

// Left-associative, as in jinja2 (2 ** 3 ** 2 is 64 there).
ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary();
  while (at_operator("**")) {
    const int line = next().line;
    left = binary(ExprKind::kBinary, "**", std::move(left), parse_unary(), line);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  const NestingGuard guard(*this);
  ExprPtr node;
  if (at_operator("-") || at_operator("+")) {
    const Token& op = next();
    node = make(ExprKind::kUnary, op.line);
    node->name = op.value;
    node->children.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filter_expr(std::move(node)) : std::move(node);
}

ExprPtr Parser::parse_primary() {
  const Token& token = current();
  ExprPtr node = make(ExprKind::kLiteral, token.line);
  switch (token.type) {
    case TokenType::kName:
      if (token.value == "true" || token.value == "True" || token.value == "false" || token.value == "False") {
        node->value = Value::boolean(token.value[0] == 't' || token.value[0] == 'T');
      } else if (token.value == "none" || token.value == "None") {
        node->value = Value::none();
      } else {
        node->kind = ExprKind::kName;
        node->name = token.value;
      }
      next();
      return node;
    case TokenType::kString: {
      std::string text;
      while (current().type == TokenType::kString) text += next().value;  // adjacent literals join
      node->value = Value::string(std::move(text));
      return node;
    }
    case TokenType::kInteger:
      node->value = Value::integer(next().int_value);
      return node;
    case TokenType::kFloat:
      node->value = Value::number(next().float_value);
      return node;
    default:
      break;
  }
  if (skip_operator("(")) {
    node = parse_tuple(true, {}, true);
    expect_operator(")");
    return node;
  }
  if (at_operator("[")) return parse_list();
  if (at_operator("{")) return parse_dict();
  fail(fmt::format("unexpected '{}'", describe(token)));
}

ExprPtr Parser::parse_list() {
  ExprPtr node = make(ExprKind::kList, next().line);
  while (!at_operator("]")) {
    if (!node->children.empty()) expect_operator(",");
    if (at_operator("]")) break;
    node->children.push_back(parse_expression());
  }
  expect_operator("]");
  return node;
}

ExprPtr Parser::parse_dict() {
  ExprPtr node = make(ExprKind::kDict, next().line);
  while (!at_operator("}")) {
    if (!node->children.empty()) expect_operator(",");
    if (at_operator("}")) break;
    node->children.push_back(parse_expression());
    expect_operator(":");
    node->children.push_back(parse_expression());
  }
  expect_operator("}");
  return node;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_operator(".") || at_operator("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_operator("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_operator("|")) {
      node = parse_filter(std::move(node), false);
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_operator("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& token = next();
  if (token.value == ".") {
    const Token& attr = next();
    if (attr.type == TokenType::kName) {
      ExprPtr out = make(ExprKind::kAttribute, token.line);
      out->name = attr.value;
      out->children.push_back(std::move(node));
      return out;
    }
    if (attr.type != TokenType::kInteger) fail("expected name or number");
    ExprPtr out = make(ExprKind::kSubscript, token.line);  // x.0 is x[0]
    out->children.push_back(std::move(node));
    out->children.push_back(make(ExprKind::kLiteral, attr.line));
    out->children.back()->value = Value::integer(attr.int_value);
    return out;
  }
  // x[i] or x[a:b:c]; absent slice bounds stay null children.
  ExprPtr out = make(ExprKind::kSubscript, token.line);
  out->children.push_back(std::move(node));
  std::vector<ExprPtr> parts(1);
  if (!at_operator(":")) parts[0] = parse_expression();
  while (skip_operator(":")) {
    out->kind = ExprKind::kSlice;
    parts.push_back(at_operator(":") || at_operator("]") ? nullptr : parse_expression());
  }
  if (parts.size() > 3) fail("invalid slice");
  parts.resize(out->kind == ExprKind::kSlice ? 3 : 1);
  for (ExprPtr& part : parts) out->children.push_back(std::move(part));
  if (at_operator(",")) fail("tuple subscripts are not supported");
  expect_operator("]");
  return out;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  ExprPtr node = make(ExprKind::kCall, current().line);
  node->children.push_back(std::move(callee));
  parse_call_args(*node);
  return node;
}

void Parser::parse_call_args(Expr& node) {
  expect_operator("(");
  bool need_comma = false;
  while (!at_operator(")")) {
    if (need_comma) {
      expect_operator(",");
      if (at_operator(")")) break;
    }
    if (at_operator("*") || at_operator("**"))
      throw JinjaError(ErrorType::kUnsupported,
                       fmt::format("unsupported Jinja construct '{}args' at line {}", current().value, current().line),
                       current().line);
    if (current().type == TokenType::kName && peek().type == TokenType::kOperator && peek().value == "=") {
      std::string key = next().value;
      next();
      node.keywords.emplace_back(std::move(key), parse_expression());
    } else {
      if (!node.keywords.empty()) fail("invalid syntax for function call expression");
      node.children.push_back(parse_expression());
    }
    need_comma = true;
  }
  expect_operator(")");
}

std::string Parser::parse_dotted_name() {
  std::string name = expect_name();
  while (skip_operator(".")) name.append(".").append(expect_name());
  return name;
}

ExprPtr Parser::parse_filter(ExprPtr node, bool start_inline) {
  while (at_operator("|") || start_inline) {
    if (!start_inline) next();
    start_inline = false;
    ExprPtr filter = make(ExprKind::kFilter, current().line);
    filter->name = parse_dotted_name();
    filter->children.push_back(std::move(node));
    if (at_operator("(")) parse_call_args(*filter);
    node = std::move(filter);
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  ExprPtr test = make(ExprKind::kTest, next().line);
  test->negated = skip_name("not");
  test->name = parse_dotted_name();
  test->children.push_back(std::move(node));
  const TokenType t = current().type;
  if (at_operator("(")) {
    parse_call_args(*test);
  } else if ((t == TokenType::kName || t == TokenType::kString || t == TokenType::kInteger || t == TokenType::kFloat ||
              at_operator("[") || at_operator("{")) &&
             !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) fail("You cannot chain multiple tests with is");
    test->children.push_back(parse_postfix(parse_primary()));  // `x is divisibleby 3`
  }
  return test;
}

}  // namespace drift::jinja
