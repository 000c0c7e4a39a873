#include "core/chat_template/value_access.h"

#include <fmt/format.h>

#include "core/chat_template/methods.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

// jinja2's Undefined for a missing attribute (string name) or element (any other key).
Value missing(const Value& object, const Value& name) {
  if (name.is_string())
    return Value::undefined(fmt::format("{} has no attribute {}", py_string_repr(object_type_repr(object)),
                                        py_string_repr(name.as_string())));
  return Value::undefined(fmt::format("{} has no element {}", object_type_repr(object), py_repr(name)));
}

// Python's own attributes that start and end with "__" exist on every object and the sandbox
// refuses them all.
bool is_dunder(const std::string& name) {
  return name.size() > 4 && name.rfind("__", 0) == 0 && name.compare(name.size() - 2, 2, "__") == 0;
}

Value unsafe(const Value& object, const std::string& name) {
  return Value::undefined(fmt::format("access to attribute {} of {} object is unsafe.", py_string_repr(name),
                                      py_string_repr(type_name(object))),
                          ErrorType::kSecurity);
}

std::optional<Value> sequence_index(const Value& object, const Value& key) {
  if (!key.is_integral()) return std::nullopt;
  int64_t index = key.as_int();
  if (object.is_string()) {
    const std::u32string points = to_code_points(object.as_string());
    const auto n = static_cast<int64_t>(points.size());
    if (index < 0) index += n;
    if (index < 0 || index >= n) return std::nullopt;
    std::string out;
    append_code_point(out, points[static_cast<size_t>(index)]);
    return Value::string(std::move(out), object.is_markup());
  }
  const auto n = static_cast<int64_t>(object.items().size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return object.items()[static_cast<size_t>(index)];
}

std::optional<int64_t> slice_bound(const Value& v) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  if (!v.is_integral()) raise(ErrorType::kType, "slice indices must be integers or None or have an __index__ method");
  return v.as_int();
}

// The indices object[start:stop:step] visits, as PySlice_AdjustIndices computes them.
std::vector<size_t> slice_indices(size_t size, std::optional<int64_t> start, std::optional<int64_t> stop,
                                  int64_t step) {
  const auto n = static_cast<int64_t>(size);
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = step < 0 ? -1 : 0;
    } else if (x >= n) {
      x = step < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = adjust(start, step < 0 ? n - 1 : 0);
  const int64_t hi = adjust(stop, step < 0 ? -1 : n);
  std::vector<size_t> out;
  for (int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

Value get_attribute(Evaluator& ev, const Value& object, const std::string& name) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      object.raise_undefined();
    case Value::Kind::kObject:
      return object.as_object().attribute(ev, name);
    case Value::Kind::kNamespace: {
      const Value* v = object.namespace_attrs().find(name);
      return v ? *v : missing(object, Value::string(name));
    }
    default:
      break;
  }
  if (is_dunder(name)) return unsafe(object, name);
  if (std::optional<Value> method = find_method(object, name)) return *method;
  if (object.is_dict())
    if (const Value* v = object.as_dict().find(name)) return *v;
  return missing(object, Value::string(name));
}

Value get_item(Evaluator& ev, const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      object.raise_undefined();
    case Value::Kind::kDict:
      if (const Value* v = object.as_dict().find(key)) return *v;
      break;
    case Value::Kind::kString:
    case Value::Kind::kList:
      if (object.is_iterator()) break;  // not subscriptable
      if (std::optional<Value> v = sequence_index(object, key)) return *v;
      break;
    default:
      break;
  }
  // Not an item: jinja2 then tries the attribute of that name (a method, a namespace field).
  if (key.is_string()) {
    if (object.is_namespace() || object.is_object()) return get_attribute(ev, object, key.as_string());
    if (is_dunder(key.as_string())) return unsafe(object, key.as_string());
    if (std::optional<Value> method = find_method(object, key.as_string())) return *method;
  }
  return missing(object, key);
}

Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step_value) {
  if (object.is_undefined()) object.raise_undefined();
  const int64_t step = slice_bound(step_value).value_or(1);
  if (step == 0) raise(ErrorType::kValue, "slice step cannot be zero");
  if (object.is_string()) {
    const std::u32string points = to_code_points(object.as_string());
    std::u32string out;
    for (size_t i : slice_indices(points.size(), slice_bound(start), slice_bound(stop), step)) out.push_back(points[i]);
    return Value::string(from_code_points(out), object.is_markup());
  }
  if (object.is_list()) {
    ValueList out;
    for (size_t i : slice_indices(object.items().size(), slice_bound(start), slice_bound(stop), step))
      out.push_back(object.items()[i]);
    return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  return Value::undefined(fmt::format(
      "{} has no element slice({}, {}, {})", object_type_repr(object), start.is_undefined() ? "None" : py_repr(start),
      stop.is_undefined() ? "None" : py_repr(stop), step_value.is_undefined() ? "None" : py_repr(step_value)));
}

}  // namespace drift::jinja
