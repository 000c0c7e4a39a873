#pragma once
// Evaluator: renders a parsed template against variables, with jinja2's runtime semantics:
// scopes (a for loop or macro body gets its own, `if` does not, so `set` inside a loop stays in
// the loop), default Undefined (prints as "", iterates as empty, raises when read from), loop
// objects, macros, break / continue, and calls into the filter, test and global tables.
#include <ctime>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/chat_template/ast.h"
#include "core/chat_template/value.h"

namespace drift::jinja {

// Variables visible at one nesting level; lookups fall through to the parent.
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};

struct RenderOptions {
  std::time_t now = 0;  // the instant strftime_now formats (local time)
};

class Evaluator {
 public:
  Evaluator(std::shared_ptr<Scope> globals, RenderOptions options);
  // Breaks the cycles macros make (a scope holds a macro whose closure holds that scope).
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Appends the rendered body to `out`.
  void render(const StmtList& body, std::string& out);

  Value eval(const Expr& expr);
  Value call(const Value& callee, CallArgs& args);
  Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
  bool apply_test(const std::string& name, const Value& input, CallArgs& args);
  const RenderOptions& options() const { return options_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  // Statements (evaluator_stmt.cpp).
  Flow exec_body(const StmtList& body);
  Flow exec(const Stmt& stmt);
  Flow exec_if(const Stmt& stmt);
  Flow exec_for(const Stmt& stmt);
  void exec_set(const Stmt& stmt);
  void exec_set_block(const Stmt& stmt);
  void exec_call_block(const Stmt& stmt);
  void exec_filter_block(const Stmt& stmt);
  void exec_with(const Stmt& stmt);
  std::string capture(const StmtList& body, std::shared_ptr<Scope> scope);
  Value make_macro(const Stmt& stmt, const std::string& name);
  void assign(const Target& target, const Value& value);
  Value apply_filter_chain(const Expr* filter, Value input);

  // Expressions (evaluator_expr.cpp).
  Value lookup(const std::string& name) const;
  Value eval_binary(const Expr& expr);
  Value eval_compare(const Expr& expr);
  Value eval_call(const Expr& expr);
  Value eval_filter(const Expr& expr);
  Value eval_test(const Expr& expr);
  Value eval_subscript(const Expr& expr);
  Value eval_dict(const Expr& expr);
  CallArgs eval_args(const Expr& expr, size_t first);
  Value eval_node(const Expr& expr);

  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  RenderOptions options_;
  const Value* filter_input_ = nullptr;  // the block text a filter chain applies to
  static constexpr int kMaxEvalDepth = 400;
  int eval_depth_ = 0;
  // Scopes macros closed over: a macro stored in (a child of) its own closure keeps both alive
  // through shared_ptr, so the destructor empties them once the render is over.
  std::vector<std::weak_ptr<Scope>> closures_;
};

// A new scope under `parent`.
std::shared_ptr<Scope> child_scope(std::shared_ptr<Scope> parent);

}  // namespace drift::jinja
