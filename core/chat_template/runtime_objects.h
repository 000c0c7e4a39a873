#pragma once
// The objects jinja2 creates at render time: the `loop` variable of a for loop, and the values
// cycler() and joiner() return. Each answers attribute reads the way jinja2's class does.
#include <memory>

#include "core/chat_template/value.h"

namespace drift::jinja {

class LoopContext : public Object {
 public:
  explicit LoopContext(ValueList items) : items_(std::move(items)) {}
  void set_index(size_t index) { index_ = index; }
  size_t size() const { return items_.size(); }
  const Value& item(size_t i) const { return items_[i]; }

  Value attribute(Evaluator& ev, const std::string& name) override;
  std::string type_repr() const override { return "jinja2.runtime.LoopContext object"; }
  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override;

 private:
  ValueList items_;
  size_t index_ = 0;
  std::shared_ptr<Value> last_changed_ = std::make_shared<Value>();  // loop.changed()'s memory
  std::shared_ptr<bool> changed_called_ = std::make_shared<bool>(false);
};

// cycler(*items) and joiner(sep).
Value make_cycler(ValueList items);
Value make_joiner(std::string separator);

}  // namespace drift::jinja
