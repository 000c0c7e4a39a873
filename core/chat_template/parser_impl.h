#pragma once
// The parser's internal class, shared by parser_expr.cpp (expressions) and parser_stmt.cpp
// (statements and the template body). It follows jinja2's recursive-descent parser so that
// precedence and the odd corners (left-associative **, filters binding tighter than unary minus's
// operand, `for x in y if c`) come out the same.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat_template/ast.h"
#include "core/chat_template/lexer.h"

namespace drift::jinja {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  StmtList parse_all();

  // Expressions (parser_expr.cpp).
  ExprPtr parse_expression(bool with_condition = true);
  // A possibly unparenthesised tuple, as after {{ or `in`; `end_names` also end it.
  ExprPtr parse_tuple(bool with_condition = true, std::initializer_list<std::string_view> end_names = {},
                      bool explicit_parens = false);

 private:
  // Token stream.
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const {
    return tokens_[pos_ + ahead < tokens_.size() ? pos_ + ahead : tokens_.size() - 1];
  }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool at_operator(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_operator(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_operator(std::string_view op);
  std::string expect_name();
  void expect_block_end();
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_unexpected(const std::string& expected) const;
  static std::string describe(const Token& token);

  ExprPtr make(ExprKind kind, int line);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_call(ExprPtr callee);
  void parse_call_args(Expr& node);
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);
  std::string parse_dotted_name();
  bool at_tuple_end(std::initializer_list<std::string_view> end_names) const;

  // Statements (parser_stmt.cpp).
  StmtList parse_body(std::initializer_list<std::string_view> end_names);
  std::unique_ptr<Stmt> parse_statement();
  std::unique_ptr<Stmt> make_stmt(StmtKind kind, int line);
  std::unique_ptr<Stmt> parse_if(int line);
  std::unique_ptr<Stmt> parse_for(int line);
  std::unique_ptr<Stmt> parse_set(int line);
  std::unique_ptr<Stmt> parse_macro(int line);
  std::unique_ptr<Stmt> parse_call_block(int line);
  std::unique_ptr<Stmt> parse_filter_block(int line);
  std::unique_ptr<Stmt> parse_with(int line);
  std::unique_ptr<Stmt> parse_block_body(StmtKind kind, int line, std::string_view end);
  void parse_params(Stmt& stmt);
  Target parse_target(bool allow_attribute);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;  // open nested expressions and blocks (see NestingGuard)

  // Bounds the parser's recursion, so a pathological template is a syntax error, not a stack
  // overflow that takes the engine down. Real templates nest a few levels.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser& parser) : parser_(parser) {
      if (++parser_.depth_ > kMaxNesting) parser_.fail("template nested too deeply (more than 200 levels)");
    }
    ~NestingGuard() { --parser_.depth_; }
    NestingGuard(const NestingGuard&) = delete;
    NestingGuard& operator=(const NestingGuard&) = delete;

   private:
    static constexpr int kMaxNesting = 200;
    Parser& parser_;
  };
  // The end tags the enclosing blocks wait for, innermost last (for "unexpected end" messages).
  std::vector<std::string> open_blocks_;
};

}  // namespace drift::jinja
