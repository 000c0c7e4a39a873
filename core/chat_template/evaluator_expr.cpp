// Expression evaluation with jinja2's runtime semantics: Python operators through value_ops,
// attribute / item access through the sandbox rules in value_access, short-circuiting and / or
// that return an operand (as Python does), chained comparisons, and calls.
#include <fmt/format.h>

#include "core/chat_template/evaluator.h"
#include "core/chat_template/value_access.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {

std::shared_ptr<Scope> child_scope(std::shared_ptr<Scope> parent) {
  auto scope = std::make_shared<Scope>();
  scope->parent = std::move(parent);
  return scope;
}

Evaluator::Evaluator(std::shared_ptr<Scope> globals, RenderOptions options)
    : scope_(child_scope(std::move(globals))), options_(options) {}

Evaluator::~Evaluator() {
  // Emptying a closure frees the macros it holds, and with them their references to it. A macro
  // value that outlives the render (none does: render returns text) would see an empty scope.
  for (const std::weak_ptr<Scope>& weak : closures_)
    if (std::shared_ptr<Scope> scope = weak.lock()) scope->vars.clear();
}

Value Evaluator::lookup(const std::string& name) const {
  for (const Scope* scope = scope_.get(); scope; scope = scope->parent.get()) {
    auto it = scope->vars.find(name);
    if (it != scope->vars.end()) return it->second;
  }
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

// The innermost node that knows its line stamps it on the error.
Value Evaluator::eval(const Expr& expr) {
  // Every nested evaluation -- a subexpression, or a macro that calls itself -- passes here, so
  // this bounds the render's recursion: runaway recursion is Python's RecursionError, not a stack
  // overflow.
  if (eval_depth_ >= kMaxEvalDepth) raise(ErrorType::kRuntime, "RecursionError: maximum recursion depth exceeded");
  struct DepthGuard {
    int& depth;
    explicit DepthGuard(int& d) : depth(++d) {}
    ~DepthGuard() { --depth; }
  } depth_guard(eval_depth_);
  try {
    return eval_node(expr);
  } catch (JinjaError& e) {
    e.set_line_if_unset(expr.line);
    throw;
  }
}

Value Evaluator::eval_node(const Expr& expr) {
  switch (expr.kind) {
    case ExprKind::kLiteral:
      return expr.value;
    case ExprKind::kName:
      return lookup(expr.name);
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const ExprPtr& child : expr.children) items.push_back(eval(*child));
      return expr.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::kDict:
      return eval_dict(expr);
    case ExprKind::kAttribute:
      return get_attribute(*this, eval(*expr.children[0]), expr.name);
    case ExprKind::kSubscript:
      return get_item(*this, eval(*expr.children[0]), eval(*expr.children[1]));
    case ExprKind::kSlice:
      return eval_subscript(expr);
    case ExprKind::kCall:
      return eval_call(expr);
    case ExprKind::kFilter:
      return eval_filter(expr);
    case ExprKind::kTest:
      return eval_test(expr);
    case ExprKind::kUnary: {
      const Value operand = eval(*expr.children[0]);
      if (expr.name == "not") return Value::boolean(!truthy(operand));
      return expr.name == "-" ? negate(operand) : unary_plus(operand);
    }
    case ExprKind::kBinary:
      return eval_binary(expr);
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      Value left = eval(*expr.children[0]);
      if (truthy(left) == (expr.kind == ExprKind::kOr)) return left;
      return eval(*expr.children[1]);
    }
    case ExprKind::kCompare:
      return eval_compare(expr);
    case ExprKind::kCondition:
      if (truthy(eval(*expr.children[1]))) return eval(*expr.children[0]);
      if (expr.children[2]) return eval(*expr.children[2]);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.", expr.line));
  }
  return Value();
}

Value Evaluator::eval_dict(const Expr& expr) {
  Dict dict;
  for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
    Value key = eval(*expr.children[i]);
    if ((key.is_list() && !key.is_tuple()) || key.is_dict())
      raise(ErrorType::kType, fmt::format("unhashable type: '{}'", type_name(key)));
    dict.set(std::move(key), eval(*expr.children[i + 1]));
  }
  return Value::dict(std::move(dict));
}

Value Evaluator::eval_subscript(const Expr& expr) {
  const Value object = eval(*expr.children[0]);
  auto bound = [&](size_t i) { return expr.children[i] ? eval(*expr.children[i]) : Value::none(); };
  return get_slice(object, bound(1), bound(2), bound(3));
}

Value Evaluator::eval_binary(const Expr& expr) {
  const Value left = eval(*expr.children[0]);
  const Value right = eval(*expr.children[1]);
  const std::string& op = expr.name;
  if (op == "~") return Value::string(py_str(left) + py_str(right));
  if (op == "+") return binary_op(BinaryOp::kAdd, left, right);
  if (op == "-") return binary_op(BinaryOp::kSub, left, right);
  if (op == "*") return binary_op(BinaryOp::kMul, left, right);
  if (op == "/") return binary_op(BinaryOp::kDiv, left, right);
  if (op == "//") return binary_op(BinaryOp::kFloorDiv, left, right);
  if (op == "%") return binary_op(BinaryOp::kMod, left, right);
  return binary_op(BinaryOp::kPow, left, right);
}

// a < b < c is a < b and b < c, each operand evaluated once, stopping at the first false.
Value Evaluator::eval_compare(const Expr& expr) {
  Value left = eval(*expr.children[0]);
  for (size_t i = 0; i < expr.ops.size(); ++i) {
    Value right = eval(*expr.children[i + 1]);
    const std::string& op = expr.ops[i];
    bool result;
    if (op == "==") {
      result = py_equal(left, right);
    } else if (op == "!=") {
      result = !py_equal(left, right);
    } else if (op == "in") {
      result = contains(right, left);
    } else if (op == "notin") {
      result = !contains(right, left);
    } else {
      const int c = py_compare(left, right, op.c_str());
      result = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
    }
    if (!result) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

CallArgs Evaluator::eval_args(const Expr& expr, size_t first) {
  CallArgs args;
  for (size_t i = first; i < expr.children.size(); ++i) args.positional.push_back(eval(*expr.children[i]));
  for (const auto& [name, value] : expr.keywords) args.keywords.emplace_back(name, eval(*value));
  return args;
}

Value Evaluator::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) callee.raise_undefined();
  if (!callee.is_callable()) raise(ErrorType::kType, fmt::format("'{}' object is not callable", type_name(callee)));
  return callee.as_callable().function(*this, args);
}

Value Evaluator::eval_call(const Expr& expr) {
  const Value callee = eval(*expr.children[0]);
  CallArgs args = eval_args(expr, 1);
  return call(callee, args);
}

// A filter without an operand is the first of a {% filter %} or {% set x | f %} chain: it gets
// the block's rendered text.
Value Evaluator::eval_filter(const Expr& expr) {
  const Value value = expr.children[0] ? eval(*expr.children[0]) : *filter_input_;
  CallArgs args = eval_args(expr, 1);
  return apply_filter(expr.name, value, args);
}

Value Evaluator::eval_test(const Expr& expr) {
  const Value value = eval(*expr.children[0]);
  CallArgs args = eval_args(expr, 1);
  return Value::boolean(apply_test(expr.name, value, args) != expr.negated);
}

}  // namespace drift::jinja
