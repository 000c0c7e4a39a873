// Python dict and list methods templates call (items, keys, values, get, index, count, copy).
// Mutating ones resolve to an undefined value raising SecurityError, like jinja2's immutable
// sandbox: templates that call list.append fail in transformers and fail here the same way.
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/methods.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

Value bind(const Value& object, const std::string& name, Value (*method)(const Value&, const CallArgs&)) {
  return Value::callable(
      name, [object, method](Evaluator&, CallArgs& args) { return method(object, args); },
      fmt::format("<built-in method {} of {} object>", name, type_name(object)));
}

Value unsafe_method(const Value& object, const std::string& name) {
  return Value::undefined(fmt::format("access to attribute {} of {} object is unsafe.", py_string_repr(name),
                                      py_string_repr(type_name(object))),
                          ErrorType::kSecurity);
}

Value dict_items(const Value& self, const CallArgs& args) {
  expect_no_args("items", args);
  ValueList out;
  for (const auto& [key, value] : self.as_dict().entries()) out.push_back(Value::tuple({key, value}));
  return Value::list(std::move(out));
}

Value dict_keys(const Value& self, const CallArgs& args) {
  expect_no_args("keys", args);
  ValueList out;
  for (const auto& entry : self.as_dict().entries()) out.push_back(entry.first);
  return Value::list(std::move(out));
}

Value dict_values(const Value& self, const CallArgs& args) {
  expect_no_args("values", args);
  ValueList out;
  for (const auto& entry : self.as_dict().entries()) out.push_back(entry.second);
  return Value::list(std::move(out));
}

Value dict_get(const Value& self, const CallArgs& args) {
  BoundArgs a("get", args, {"key", "default"}, 1);
  const Value* v = self.as_dict().find(a[0]);
  return v ? *v : a.get_or(1, Value::none());
}

Value dict_copy(const Value& self, const CallArgs& args) {
  expect_no_args("copy", args);
  return Value::dict(self.as_dict());
}

Value list_index(const Value& self, const CallArgs& args) {
  BoundArgs a("index", args, {"value", "start", "stop"}, 1);
  const ValueList& items = self.items();
  for (size_t i = static_cast<size_t>(a.get_int(1, 0)); i < items.size(); ++i)
    if (py_equal(items[i], a[0])) return Value::integer(static_cast<int64_t>(i));
  raise(ErrorType::kValue, fmt::format("{} is not in list", py_repr(a[0])));
}

Value list_count(const Value& self, const CallArgs& args) {
  BoundArgs a("count", args, {"value"}, 1);
  int64_t n = 0;
  for (const Value& v : self.items()) n += py_equal(v, a[0]) ? 1 : 0;
  return Value::integer(n);
}

Value list_copy(const Value& self, const CallArgs& args) {
  expect_no_args("copy", args);
  return Value::list(self.items());
}

}  // namespace

std::optional<Value> find_dict_method(const Value& object, const std::string& name) {
  static const std::unordered_set<std::string_view> mutating = {"pop", "popitem", "setdefault", "update", "clear"};
  if (mutating.count(name)) return unsafe_method(object, name);
  if (name == "items") return bind(object, name, dict_items);
  if (name == "keys") return bind(object, name, dict_keys);
  if (name == "values") return bind(object, name, dict_values);
  if (name == "get") return bind(object, name, dict_get);
  if (name == "copy") return bind(object, name, dict_copy);
  return std::nullopt;
}

std::optional<Value> find_list_method(const Value& object, const std::string& name) {
  static const std::unordered_set<std::string_view> mutating = {"append", "extend",  "insert", "pop",
                                                                "remove", "reverse", "sort",   "clear"};
  if (!object.is_tuple() && mutating.count(name)) return unsafe_method(object, name);
  if (name == "index") return bind(object, name, list_index);
  if (name == "count") return bind(object, name, list_count);
  if (name == "copy" && !object.is_tuple()) return bind(object, name, list_copy);
  return std::nullopt;
}

}  // namespace drift::jinja
