// map / select / reject / selectattr / rejectattr, the filter table itself, and the helpers
// several filters share (attribute paths, case folding).
#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/evaluator.h"
#include "core/chat_template/filters.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_access.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {

Value get_attribute_path(Evaluator& ev, const Value& item, const Value& path) {
  if (!path.is_string()) return get_item(ev, item, path);
  Value current = item;
  for (const std::string& part : py_split(path.as_string(), std::string("."), -1)) {
    const bool numeric =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = get_item(ev, current, numeric ? Value::integer(std::stoll(part)) : Value::string(part));
  }
  return current;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value::string(py_lower(v.as_string())) : v; }

namespace {

// The arguments after the first `skip` positional ones, for the filter or test they name.
CallArgs rest_args(const CallArgs& args, size_t skip) {
  CallArgs rest;
  for (size_t i = skip; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.keywords = args.keywords;
  return rest;
}

// Like jinja2's generators, map and select yield nothing for a false operand (None included).
Value f_map(Evaluator& ev, const Value& v, const CallArgs& args) {
  ValueList out;
  if (!truthy(v)) return Value::iterator({});
  if (args.positional.empty()) {  // map(attribute="x", default=...)
    BoundArgs a("map", args, {"attribute", "default"});
    if (!a.has(0)) raise(ErrorType::kRuntime, "map requires a filter argument");
    for (const Value& item : iterate(v)) {
      Value value = get_attribute_path(ev, item, a[0]);
      out.push_back(value.is_undefined() && a.has(1) ? a[1] : value);
    }
    return Value::iterator(std::move(out));
  }
  const std::string filter = py_str(args.positional[0]);
  for (const Value& item : iterate(v)) {
    CallArgs rest = rest_args(args, 1);
    out.push_back(ev.apply_filter(filter, item, rest));
  }
  return Value::iterator(std::move(out));
}

// select / reject (attribute empty) and selectattr / rejectattr: keep items whose test result
// (truthiness without a test name) equals `keep`.
Value select(Evaluator& ev, const Value& v, const CallArgs& args, bool by_attribute, bool keep) {
  size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) raise(ErrorType::kType, "selectattr() missing required argument 'attr'");
    attribute = args.positional[next++];
  }
  if (!truthy(v)) return Value::iterator({});
  std::string test;
  if (next < args.positional.size()) test = py_str(args.positional[next++]);
  ValueList out;
  for (const Value& item : iterate(v)) {
    const Value subject = by_attribute ? get_attribute_path(ev, item, attribute) : item;
    bool result;
    if (test.empty()) {
      result = truthy(subject);
    } else {
      CallArgs rest = rest_args(args, next);
      result = ev.apply_test(test, subject, rest);
    }
    if (result == keep) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Value f_select(Evaluator& ev, const Value& v, const CallArgs& args) { return select(ev, v, args, false, true); }
Value f_reject(Evaluator& ev, const Value& v, const CallArgs& args) { return select(ev, v, args, false, false); }
Value f_selectattr(Evaluator& ev, const Value& v, const CallArgs& args) { return select(ev, v, args, true, true); }
Value f_rejectattr(Evaluator& ev, const Value& v, const CallArgs& args) { return select(ev, v, args, true, false); }

FilterTable build_table() {
  FilterTable table;
  add_text_filters(table);
  add_sequence_filters(table);
  add_select_filters(table);
  return table;
}

}  // namespace

void add_select_filters(FilterTable& table) {
  table["map"] = f_map;
  table["select"] = f_select;
  table["reject"] = f_reject;
  table["selectattr"] = f_selectattr;
  table["rejectattr"] = f_rejectattr;
}

FilterFn find_filter(std::string_view name) {
  static const FilterTable table = build_table();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

Value Evaluator::apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  FilterFn filter = find_filter(name);
  if (!filter) raise(ErrorType::kAssertion, fmt::format("No filter named '{}'.", name));
  return filter(*this, input, args);
}

}  // namespace drift::jinja
