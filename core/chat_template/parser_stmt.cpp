// Statement parsing: the template body (data, {{ }}, {% %}) and each tag jinja2's parser knows,
// as its parse_if / parse_for / parse_set / ... do it. Tags chat templates do not need are
// refused with the construct and line named.
#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/chat_template/parser.h"
#include "core/chat_template/parser_impl.h"

namespace drift::jinja {
namespace {

// jinja2 tags (and the ones its extensions add) that this renderer refuses.
constexpr std::array<std::string_view, 9> kUnsupportedTags = {"extends",    "block", "include", "import", "from",
                                                              "autoescape", "do",    "trans",   "debug"};

[[noreturn]] void unsupported(std::string_view construct, int line) {
  throw JinjaError(ErrorType::kUnsupported, fmt::format("unsupported Jinja construct '{}' at line {}", construct, line),
                   line);
}

}  // namespace

StmtList parse_template(const std::string& source) { return Parser(tokenize(source)).parse_all(); }

StmtList Parser::parse_all() {
  StmtList body = parse_body({});
  if (current().type != TokenType::kEof) fail(fmt::format("Encountered unknown tag '{}'.", current().value));
  return body;
}

std::unique_ptr<Stmt> Parser::make_stmt(StmtKind kind, int line) {
  auto stmt = std::make_unique<Stmt>();
  stmt->kind = kind;
  stmt->line = line;
  return stmt;
}

void Parser::expect_block_end() {
  if (current().type != TokenType::kBlockEnd) fail_unexpected("'end of statement block'");
  next();
}

// jinja2's subparse: statements until one of `end_names` opens a tag (left as the current token).
StmtList Parser::parse_body(std::initializer_list<std::string_view> end_names) {
  const NestingGuard guard(*this);
  StmtList body;
  while (current().type != TokenType::kEof) {
    const Token& token = current();
    if (token.type == TokenType::kData) {
      auto stmt = make_stmt(StmtKind::kData, token.line);
      stmt->text = next().value;
      body.push_back(std::move(stmt));
    } else if (token.type == TokenType::kVariableBegin) {
      auto stmt = make_stmt(StmtKind::kOutput, next().line);
      stmt->expr = parse_tuple();
      if (current().type != TokenType::kVariableEnd) fail_unexpected("'end of print statement'");
      next();
      body.push_back(std::move(stmt));
    } else if (token.type == TokenType::kBlockBegin) {
      next();
      for (std::string_view name : end_names)
        if (at_name(name)) return body;
      body.push_back(parse_statement());
      expect_block_end();
    } else {
      fail(fmt::format("unexpected '{}'", describe(token)));
    }
  }
  if (end_names.size() != 0) {
    std::string wanted;
    for (std::string_view name : end_names) wanted += (wanted.empty() ? "'" : " or '") + std::string(name) + "'";
    fail(fmt::format("Unexpected end of template. Jinja was looking for the following tags: {}.", wanted));
  }
  return body;
}

std::unique_ptr<Stmt> Parser::parse_statement() {
  if (current().type != TokenType::kName) fail("tag name expected");
  const std::string tag = current().value;
  const int line = current().line;
  if (std::find(kUnsupportedTags.begin(), kUnsupportedTags.end(), tag) != kUnsupportedTags.end())
    unsupported(tag, line);
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "call") return parse_call_block(line);
  if (tag == "filter") return parse_filter_block(line);
  if (tag == "with") return parse_with(line);
  if (tag == "generation") return parse_block_body(StmtKind::kBody, line, "endgeneration");
  if (tag == "break" || tag == "continue") {
    next();
    return make_stmt(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, line);
  }
  if (tag == "print") {
    next();
    auto stmt = make_stmt(StmtKind::kOutput, line);
    stmt->expr = parse_tuple();
    return stmt;
  }
  fail(fmt::format("Encountered unknown tag '{}'.", tag));
}

std::unique_ptr<Stmt> Parser::parse_block_body(StmtKind kind, int line, std::string_view end) {
  next();
  auto stmt = make_stmt(kind, line);
  expect_block_end();
  stmt->bodies.push_back(parse_body({end}));
  next();
  return stmt;
}

std::unique_ptr<Stmt> Parser::parse_if(int line) {
  next();
  auto stmt = make_stmt(StmtKind::kIf, line);
  while (true) {
    stmt->conditions.push_back(parse_tuple(false));
    expect_block_end();
    stmt->bodies.push_back(parse_body({"elif", "else", "endif"}));
    const std::string tag = next().value;
    if (tag == "elif") continue;
    if (tag == "else") {
      expect_block_end();
      stmt->bodies.push_back(parse_body({"endif"}));
      next();
    }
    return stmt;
  }
}

// A for / set target: "x", "a, b", "(a, b)"; with `allow_attribute`, "ns.attr".
Target Parser::parse_target(bool allow_attribute) {
  Target target;
  if (allow_attribute && current().type == TokenType::kName && peek().type == TokenType::kOperator &&
      peek().value == ".") {
    target.names.push_back(next().value);
    next();
    target.attribute = expect_name();
    return target;
  }
  const bool parens = skip_operator("(");
  while (true) {
    target.names.push_back(expect_name());
    if (!skip_operator(",")) break;
    target.unpack = true;
    if (current().type != TokenType::kName) break;  // trailing comma
  }
  if (parens) {
    target.unpack = true;
    expect_operator(")");
  }
  return target;
}

std::unique_ptr<Stmt> Parser::parse_for(int line) {
  next();
  auto stmt = make_stmt(StmtKind::kFor, line);
  stmt->target = parse_target(false);
  if (!skip_name("in")) fail_unexpected("'in'");
  stmt->expr = parse_tuple(false, {"recursive"});
  if (skip_name("if")) stmt->filter = parse_expression();
  if (at_name("recursive")) unsupported("recursive", current().line);
  expect_block_end();
  stmt->bodies.push_back(parse_body({"endfor", "else"}));
  if (next().value == "else") {
    expect_block_end();
    stmt->bodies.push_back(parse_body({"endfor"}));
    next();
  }
  return stmt;
}

std::unique_ptr<Stmt> Parser::parse_set(int line) {
  next();
  Target target = parse_target(true);
  if (skip_operator("=")) {
    auto stmt = make_stmt(StmtKind::kSet, line);
    stmt->target = std::move(target);
    stmt->expr = parse_tuple();
    return stmt;
  }
  auto stmt = make_stmt(StmtKind::kSetBlock, line);
  stmt->target = std::move(target);
  if (at_operator("|")) stmt->expr = parse_filter(nullptr, false);
  expect_block_end();
  stmt->bodies.push_back(parse_body({"endset"}));
  next();
  return stmt;
}

void Parser::parse_params(Stmt& stmt) {
  expect_operator("(");
  while (!at_operator(")")) {
    if (!stmt.params.empty()) expect_operator(",");
    std::string name = expect_name();
    ExprPtr fallback;
    if (skip_operator("=")) {
      fallback = parse_expression();
    } else if (!stmt.params.empty() && stmt.params.back().second) {
      fail("non-default argument follows default argument");
    }
    stmt.params.emplace_back(std::move(name), std::move(fallback));
  }
  expect_operator(")");
}

std::unique_ptr<Stmt> Parser::parse_macro(int line) {
  next();
  auto stmt = make_stmt(StmtKind::kMacro, line);
  stmt->text = expect_name();
  parse_params(*stmt);
  expect_block_end();
  stmt->bodies.push_back(parse_body({"endmacro"}));
  next();
  return stmt;
}

std::unique_ptr<Stmt> Parser::parse_call_block(int line) {
  next();
  auto stmt = make_stmt(StmtKind::kCallBlock, line);
  if (at_operator("(")) parse_params(*stmt);
  stmt->expr = parse_expression();
  if (stmt->expr->kind != ExprKind::kCall) throw JinjaError(ErrorType::kSyntax, "expected call", line);
  expect_block_end();
  stmt->bodies.push_back(parse_body({"endcall"}));
  next();
  return stmt;
}

std::unique_ptr<Stmt> Parser::parse_filter_block(int line) {
  next();
  auto stmt = make_stmt(StmtKind::kFilterBlock, line);
  stmt->expr = parse_filter(nullptr, true);
  expect_block_end();
  stmt->bodies.push_back(parse_body({"endfilter"}));
  next();
  return stmt;
}

std::unique_ptr<Stmt> Parser::parse_with(int line) {
  next();
  auto stmt = make_stmt(StmtKind::kWith, line);
  while (current().type != TokenType::kBlockEnd) {
    if (!stmt->params.empty()) expect_operator(",");
    std::string name = expect_name();
    expect_operator("=");
    stmt->params.emplace_back(std::move(name), parse_expression());
  }
  expect_block_end();
  stmt->bodies.push_back(parse_body({"endwith"}));
  next();
  return stmt;
}

}  // namespace drift::jinja
