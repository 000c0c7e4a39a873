// Sequence and mapping filters: length, first / last, list, items, join, default, unique, sort,
// reverse, dictsort, batch, slice, sum, min / max, attr.
#include <algorithm>

#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/filters.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_access.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

// The key an item sorts / dedups by: the attribute path when given, case-folded unless asked not to.
Value sort_key(Evaluator& ev, const Value& item, const Value& attribute, bool case_sensitive) {
  Value key = attribute.is_undefined() || attribute.is_none() ? item : get_attribute_path(ev, item, attribute);
  return case_sensitive ? key : ignore_case(key);
}

Value f_length(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("length", args);
  return Value::integer(length(v));
}

Value f_first(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("first", args);
  ValueList items = iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("last", args);
  if (v.is_iterator() || (!v.is_list() && !v.is_dict() && !v.is_string() && !v.is_undefined()))
    raise(ErrorType::kType, fmt::format("'{}' object is not reversible", type_name(v)));
  ValueList items = iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_list(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("list", args);
  return Value::list(iterate(v));
}

Value f_items(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("items", args);
  if (v.is_undefined()) return Value::iterator({});
  if (!v.is_dict()) raise(ErrorType::kType, "Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [key, value] : v.as_dict().entries()) out.push_back(Value::tuple({key, value}));
  return Value::iterator(std::move(out));
}

Value f_join(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  const std::string separator = a.has(0) ? py_str(a[0]) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += separator;
    first = false;
    out += py_str(a.has(1) && !a[1].is_none() ? get_attribute_path(ev, item, a[1]) : item);
  }
  return Value::string(std::move(out));
}

Value f_default(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (a.get_bool(1, false) && !truthy(v))) return a.get_or(0, Value::string(""));
  return v;
}

Value f_unique(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  ValueList out;
  ValueList seen;
  for (const Value& item : iterate(v)) {
    Value key = sort_key(ev, item, a[1], a.get_bool(0, false));
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, key); })) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

// Python's sorted(): stable, reverse keeps equal items in their original order.
ValueList sorted_by(ValueList items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return reverse ? py_compare(keys[y], keys[x], "<") < 0 : py_compare(keys[x], keys[y], "<") < 0;
  });
  ValueList out;
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

Value f_sort(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  ValueList items = iterate(v);
  std::vector<std::string> paths;
  if (a.has(2) && a[2].is_string()) {
    for (const std::string& part : py_split(a[2].as_string(), std::string(","), -1)) paths.push_back(part);
  }
  std::vector<Value> keys;
  for (const Value& item : items) {
    if (paths.size() <= 1) {
      keys.push_back(sort_key(ev, item, a.get_or(2, Value::none()), a.get_bool(1, false)));
      continue;
    }
    ValueList parts;  // "a,b": sort by the tuple of attributes
    for (const std::string& path : paths)
      parts.push_back(sort_key(ev, item, Value::string(path), a.get_bool(1, false)));
    keys.push_back(Value::tuple(std::move(parts)));
  }
  return Value::list(sorted_by(std::move(items), keys, a.get_bool(0, false)));
}

Value f_reverse(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("reverse", args);
  if (v.is_string()) {
    std::u32string points = to_code_points(v.as_string());
    std::reverse(points.begin(), points.end());
    return Value::string(from_code_points(points));
  }
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  // reversed() of a list / dict / tuple is a lazy iterator; other iterables come back as a list.
  if (v.is_dict()) return Value::iterator(std::move(items), "dict_reversekeyiterator");
  if (v.is_list()) return Value::iterator(std::move(items), v.is_tuple() ? "reversed" : "list_reverseiterator");
  return Value::list(std::move(items));
}

Value f_dictsort(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) raise(ErrorType::kType, "Can only get item pairs from a mapping.");
  const std::string by = a.get_string(1, "key");
  if (by != "key" && by != "value") raise(ErrorType::kRuntime, "You can only sort by either 'key' or 'value'");
  ValueList items;
  std::vector<Value> keys;
  for (const auto& [key, value] : v.as_dict().entries()) {
    items.push_back(Value::tuple({key, value}));
    const Value& k = by == "key" ? key : value;
    keys.push_back(a.get_bool(0, false) ? k : ignore_case(k));
  }
  return Value::list(sorted_by(std::move(items), keys, a.get_bool(2, false)));
}

Value f_batch(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"}, 1);
  const int64_t count = a.get_int(0, 1);
  if (count <= 0) raise(ErrorType::kValue, "batch size must be positive");
  ValueList out;
  ValueList current;
  for (const Value& item : iterate(v)) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == count) out.push_back(Value::list(std::exchange(current, {})));
  }
  if (!current.empty()) {
    if (a.has(1) && !a[1].is_none())
      while (static_cast<int64_t>(current.size()) < count) current.push_back(a[1]);
    out.push_back(Value::list(std::move(current)));
  }
  return Value::iterator(std::move(out));
}

Value f_slice(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("slice", args, {"slices", "fill_with"}, 1);
  const ValueList items = iterate(v);
  const int64_t slices = a.get_int(0, 1);
  if (slices <= 0) raise(ErrorType::kZeroDivision, "integer division or modulo by zero");
  const auto n = static_cast<int64_t>(items.size());
  const int64_t per = n / slices;
  const int64_t extra = n % slices;
  int64_t offset = 0;
  ValueList out;
  for (int64_t i = 0; i < slices; ++i) {
    const int64_t start = offset + i * per;
    if (i < extra) ++offset;
    const int64_t end = offset + (i + 1) * per;
    ValueList part(items.begin() + start, items.begin() + end);
    if (a.has(1) && !a[1].is_none() && i >= extra) part.push_back(a[1]);
    out.push_back(Value::list(std::move(part)));
  }
  return Value::iterator(std::move(out));
}

Value f_sum(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : iterate(v))
    total = binary_op(BinaryOp::kAdd, total, a.has(0) && !a[0].is_none() ? get_attribute_path(ev, item, a[0]) : item);
  return total;
}

Value min_max(Evaluator& ev, const Value& v, const CallArgs& args, bool want_max) {
  BoundArgs a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const ValueList items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(ev, items[0], a[1], a.get_bool(0, false));
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(ev, items[i], a[1], a.get_bool(0, false));
    const int c = py_compare(key, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value f_min(Evaluator& ev, const Value& v, const CallArgs& args) { return min_max(ev, v, args, false); }
Value f_max(Evaluator& ev, const Value& v, const CallArgs& args) { return min_max(ev, v, args, true); }

Value f_attr(Evaluator& ev, const Value& v, const CallArgs& args) {
  BoundArgs a("attr", args, {"name"}, 1);
  return get_attribute(ev, v, py_str(a[0]));
}

}  // namespace

void add_sequence_filters(FilterTable& table) {
  table["length"] = f_length;
  table["count"] = f_length;
  table["first"] = f_first;
  table["last"] = f_last;
  table["list"] = f_list;
  table["items"] = f_items;
  table["join"] = f_join;
  table["default"] = f_default;
  table["d"] = f_default;
  table["unique"] = f_unique;
  table["sort"] = f_sort;
  table["reverse"] = f_reverse;
  table["dictsort"] = f_dictsort;
  table["batch"] = f_batch;
  table["slice"] = f_slice;
  table["sum"] = f_sum;
  table["min"] = f_min;
  table["max"] = f_max;
  table["attr"] = f_attr;
}

}  // namespace drift::jinja
