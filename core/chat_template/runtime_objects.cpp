#include "core/chat_template/runtime_objects.h"

#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {

std::string LoopContext::repr() const { return fmt::format("<LoopContext {}/{}>", index_ + 1, items_.size()); }

Value LoopContext::attribute(Evaluator&, const std::string& name) {
  const auto i = static_cast<int64_t>(index_);
  const auto n = static_cast<int64_t>(items_.size());
  if (name == "index0") return Value::integer(i);
  if (name == "index") return Value::integer(i + 1);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "previtem") return i > 0 ? items_[index_ - 1] : Value::undefined("there is no previous item");
  if (name == "nextitem") return i + 1 < n ? items_[index_ + 1] : Value::undefined("there is no next item");
  if (name == "cycle") {
    const size_t index = index_;
    return Value::callable("cycle", [index](Evaluator&, CallArgs& args) {
      if (args.positional.empty()) raise(ErrorType::kType, "no items for cycling given");
      return args.positional[index % args.positional.size()];
    });
  }
  if (name == "changed") {
    auto last = last_changed_;
    auto called = changed_called_;
    return Value::callable("changed", [last, called](Evaluator&, CallArgs& args) {
      Value current = Value::tuple(args.positional);
      const bool changed = !*called || !py_equal(*last, current);
      *called = true;
      *last = current;
      return Value::boolean(changed);
    });
  }
  return Value::undefined(fmt::format("'jinja2.runtime.LoopContext object' has no attribute '{}'", name));
}

namespace {

class Cycler : public Object {
 public:
  explicit Cycler(ValueList items) : items_(std::move(items)) {}
  Value attribute(Evaluator&, const std::string& name) override {
    if (name == "current") return items_[pos_];
    if (name == "reset")
      return Value::callable("reset", [this](Evaluator&, CallArgs&) {
        pos_ = 0;
        return Value::none();
      });
    if (name == "next")
      return Value::callable("next", [this](Evaluator&, CallArgs&) {
        Value v = items_[pos_];
        pos_ = (pos_ + 1) % items_.size();
        return v;
      });
    return Value::undefined(fmt::format("'jinja2.utils.Cycler object' has no attribute '{}'", name));
  }
  std::string type_repr() const override { return "jinja2.utils.Cycler object"; }
  std::string type_name() const override { return "Cycler"; }
  std::string repr() const override { return "<jinja2.utils.Cycler object>"; }

 private:
  ValueList items_;
  size_t pos_ = 0;
};

}  // namespace

Value make_cycler(ValueList items) {
  if (items.empty()) raise(ErrorType::kRuntime, "at least one item has to be provided");
  return Value::object(std::make_shared<Cycler>(std::move(items)));
}

// joiner() is a callable that returns "" the first time and the separator after.
Value make_joiner(std::string separator) {
  auto used = std::make_shared<bool>(false);
  return Value::callable(
      "joiner",
      [used, separator](Evaluator&, CallArgs&) {
        if (!*used) {
          *used = true;
          return Value::string("");
        }
        return Value::string(separator);
      },
      "<jinja2.utils.Joiner object>");
}

}  // namespace drift::jinja
