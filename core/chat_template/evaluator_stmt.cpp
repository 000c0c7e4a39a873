// Statement execution: output, if, for (with loop, else, inline filter, break / continue), set
// (names, unpacking, namespace attributes, block capture), macros and call blocks, filter and
// with blocks. Scoping follows jinja2: a for loop, macro call, call / generation body and with
// block each get a scope of their own; if blocks share their parent's.
#include <fmt/format.h>

#include "core/chat_template/evaluator.h"
#include "core/chat_template/runtime_objects.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

// Restores the evaluator's scope when a nested body ends, also when it throws.
class ScopeGuard {
 public:
  ScopeGuard(std::shared_ptr<Scope>& slot, std::shared_ptr<Scope> inner) : slot_(slot), saved_(slot) {
    slot_ = std::move(inner);
  }
  ~ScopeGuard() { slot_ = saved_; }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  std::shared_ptr<Scope>& slot_;
  std::shared_ptr<Scope> saved_;
};

}  // namespace

void Evaluator::render(const StmtList& body, std::string& out) {
  std::string* saved = out_;
  out_ = &out;
  exec_body(body);
  out_ = saved;
}

Evaluator::Flow Evaluator::exec_body(const StmtList& body) {
  for (const auto& stmt : body) {
    const Flow flow = exec(*stmt);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec(const Stmt& stmt) {
  try {
    switch (stmt.kind) {
      case StmtKind::kData:
        *out_ += stmt.text;
        return Flow::kNormal;
      case StmtKind::kOutput:
        *out_ += py_str(eval(*stmt.expr));
        return Flow::kNormal;
      case StmtKind::kIf:
        return exec_if(stmt);
      case StmtKind::kFor:
        return exec_for(stmt);
      case StmtKind::kSet:
        exec_set(stmt);
        return Flow::kNormal;
      case StmtKind::kSetBlock:
        exec_set_block(stmt);
        return Flow::kNormal;
      case StmtKind::kMacro:
        scope_->vars[stmt.text] = make_macro(stmt, stmt.text);
        return Flow::kNormal;
      case StmtKind::kCallBlock:
        exec_call_block(stmt);
        return Flow::kNormal;
      case StmtKind::kFilterBlock:
        exec_filter_block(stmt);
        return Flow::kNormal;
      case StmtKind::kWith:
        exec_with(stmt);
        return Flow::kNormal;
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kBody:
        // transformers' {% generation %} is a call block: its body renders in a scope of its own.
        *out_ += capture(stmt.bodies[0], child_scope(scope_));
        return Flow::kNormal;
    }
  } catch (JinjaError& e) {
    e.set_line_if_unset(stmt.line);
    throw;
  }
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec_if(const Stmt& stmt) {
  for (size_t i = 0; i < stmt.conditions.size(); ++i)
    if (truthy(eval(*stmt.conditions[i]))) return exec_body(stmt.bodies[i]);
  if (stmt.bodies.size() > stmt.conditions.size()) return exec_body(stmt.bodies.back());
  return Flow::kNormal;
}

Evaluator::Flow Evaluator::exec_for(const Stmt& stmt) {
  ValueList items = iterate(eval(*stmt.expr));
  ScopeGuard guard(scope_, child_scope(scope_));
  if (stmt.filter) {  // `for x in xs if cond`: the loop (and loop.length) sees only the kept items
    ValueList kept;
    for (Value& item : items) {
      assign(stmt.target, item);
      if (truthy(eval(*stmt.filter))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  auto loop = std::make_shared<LoopContext>(items);
  scope_->vars["loop"] = Value::object(loop);
  for (size_t i = 0; i < items.size(); ++i) {
    loop->set_index(i);
    assign(stmt.target, items[i]);
    if (exec_body(stmt.bodies[0]) == Flow::kBreak) break;
  }
  if (items.empty() && stmt.bodies.size() > 1) {
    scope_->vars.erase("loop");  // the else block sees the outer loop, if any
    exec_body(stmt.bodies[1]);
  }
  return Flow::kNormal;
}

void Evaluator::assign(const Target& target, const Value& value) {
  if (!target.attribute.empty()) {
    const Value ns = lookup(target.names[0]);
    if (!ns.is_namespace()) raise(ErrorType::kRuntime, "cannot assign attribute on non-namespace object");
    if (target.attribute[0] == '_')
      raise(ErrorType::kSecurity,
            fmt::format("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '{}'. "
                        "Please rename the attribute.",
                        target.attribute));
    ns.namespace_attrs().set(Value::string(target.attribute), value);
    return;
  }
  if (!target.unpack) {
    scope_->vars[target.names[0]] = value;
    return;
  }
  const ValueList items = iterate(value);
  if (items.size() != target.names.size())
    raise(ErrorType::kValue,
          items.size() > target.names.size()
              ? fmt::format("too many values to unpack (expected {})", target.names.size())
              : fmt::format("not enough values to unpack (expected {}, got {})", target.names.size(), items.size()));
  for (size_t i = 0; i < items.size(); ++i) scope_->vars[target.names[i]] = items[i];
}

void Evaluator::exec_set(const Stmt& stmt) { assign(stmt.target, eval(*stmt.expr)); }

std::string Evaluator::capture(const StmtList& body, std::shared_ptr<Scope> scope) {
  ScopeGuard guard(scope_, std::move(scope));
  std::string text;
  std::string* saved = out_;
  out_ = &text;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return text;
}

Value Evaluator::apply_filter_chain(const Expr* filter, Value input) {
  if (!filter) return input;
  const Value* saved = filter_input_;
  filter_input_ = &input;
  Value result;
  try {
    result = eval(*filter);
  } catch (...) {
    filter_input_ = saved;
    throw;
  }
  filter_input_ = saved;
  return result;
}

// {% set x %}...{% endset %}: the body renders in the current scope (its sets are visible after).
void Evaluator::exec_set_block(const Stmt& stmt) {
  std::string text = capture(stmt.bodies[0], scope_);
  assign(stmt.target, apply_filter_chain(stmt.expr.get(), Value::string(std::move(text))));
}

void Evaluator::exec_filter_block(const Stmt& stmt) {
  std::string text = capture(stmt.bodies[0], child_scope(scope_));
  *out_ += py_str(apply_filter_chain(stmt.expr.get(), Value::string(std::move(text))));
}

void Evaluator::exec_with(const Stmt& stmt) {
  auto scope = child_scope(scope_);
  for (const auto& [name, value] : stmt.params) scope->vars[name] = eval(*value);
  ScopeGuard guard(scope_, scope);
  exec_body(stmt.bodies[0]);
}

// A macro (or a call block's `caller`): binds arguments like jinja2's Macro (missing ones are
// undefined, extras land in varargs / kwargs), renders its body in a scope under the one it was
// defined in, and returns the text.
Value Evaluator::make_macro(const Stmt& stmt, const std::string& name) {
  std::shared_ptr<Scope> closure = scope_;
  closures_.push_back(closure);
  const Stmt* def = &stmt;
  return Value::callable(
      name,
      [closure, def, name](Evaluator& ev, CallArgs& args) {
        auto scope = child_scope(closure);
        ValueList varargs;
        for (size_t i = 0; i < args.positional.size(); ++i) {
          if (i < def->params.size()) {
            scope->vars[def->params[i].first] = args.positional[i];
          } else {
            varargs.push_back(args.positional[i]);
          }
        }
        Dict kwargs;
        for (auto& [key, value] : args.keywords) {
          bool known = key == "caller";
          for (const auto& param : def->params) known = known || param.first == key;
          if (known) {
            scope->vars[key] = value;
          } else {
            kwargs.set(Value::string(key), value);
          }
        }
        scope->vars["varargs"] = Value::tuple(std::move(varargs));
        scope->vars["kwargs"] = Value::dict(std::move(kwargs));
        ScopeGuard guard(ev.scope_, scope);
        for (const auto& [param, fallback] : def->params) {
          if (scope->vars.count(param)) continue;
          scope->vars[param] =
              fallback ? ev.eval(*fallback) : Value::undefined(fmt::format("parameter '{}' was not provided", param));
        }
        return Value::string(ev.capture(def->bodies[0], scope));
      },
      fmt::format("<Macro '{}'>", name));
}

void Evaluator::exec_call_block(const Stmt& stmt) {
  const Expr& call_expr = *stmt.expr;
  const Value callee = eval(*call_expr.children[0]);
  CallArgs args = eval_args(call_expr, 1);
  args.keywords.emplace_back("caller", make_macro(stmt, "caller"));
  *out_ += py_str(call(callee, args));
}

}  // namespace drift::jinja
