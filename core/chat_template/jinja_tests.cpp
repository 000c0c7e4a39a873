// jinja2's built-in tests (`x is defined`, `n is divisibleby 3`, ...), with Python's type rules:
// bool counts as a number but not as an integer, str is a sequence, only dict is a mapping.
#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/evaluator.h"
#include "core/chat_template/filters.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

using TestTable = std::unordered_map<std::string_view, TestFn>;

const Value& operand(std::string_view test, const CallArgs& args) {
  if (args.positional.empty()) {
    if (!args.keywords.empty()) return args.keywords[0].second;
    raise(ErrorType::kType, fmt::format("{}() missing 1 required positional argument", test));
  }
  return args.positional[0];
}

int64_t modulo_operand(const Value& v) {
  if (!v.is_integral() && !v.is_float())
    raise(ErrorType::kType, fmt::format("unsupported operand type(s) for %: '{}' and 'int'", type_name(v)));
  return v.as_int();
}

#define DRIFT_TEST(name) bool name(Evaluator&, const Value& v, const CallArgs& args)

DRIFT_TEST(t_defined) { return (void)args, !v.is_undefined(); }
DRIFT_TEST(t_undefined) { return (void)args, v.is_undefined(); }
DRIFT_TEST(t_none) { return (void)args, v.is_none(); }
DRIFT_TEST(t_boolean) { return (void)args, v.is_bool(); }
DRIFT_TEST(t_true) { return (void)args, v.is_bool() && v.as_bool(); }
DRIFT_TEST(t_false) { return (void)args, v.is_bool() && !v.as_bool(); }
DRIFT_TEST(t_integer) { return (void)args, v.is_int(); }
DRIFT_TEST(t_float) { return (void)args, v.is_float(); }
DRIFT_TEST(t_number) { return (void)args, v.is_number(); }
DRIFT_TEST(t_string) { return (void)args, v.is_string(); }
DRIFT_TEST(t_mapping) { return (void)args, v.is_dict(); }
DRIFT_TEST(t_sequence) { return (void)args, v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }
DRIFT_TEST(t_iterable) { return (void)args, v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }
DRIFT_TEST(t_callable) { return (void)args, v.is_callable() || v.is_undefined(); }
DRIFT_TEST(t_escaped) { return (void)args, v.is_markup(); }
DRIFT_TEST(t_lower) { return (void)args, py_islower(py_str(v)); }
DRIFT_TEST(t_upper) { return (void)args, py_isupper(py_str(v)); }
DRIFT_TEST(t_odd) { return (void)args, modulo_operand(v) % 2 != 0; }
DRIFT_TEST(t_even) { return (void)args, modulo_operand(v) % 2 == 0; }
DRIFT_TEST(t_divisibleby) {
  const Value& n = operand("divisibleby", args);
  return binary_op(BinaryOp::kMod, v, n).as_float() == 0;
}
DRIFT_TEST(t_eq) { return py_equal(v, operand("eq", args)); }
DRIFT_TEST(t_ne) { return !py_equal(v, operand("ne", args)); }
DRIFT_TEST(t_lt) { return py_compare(v, operand("lt", args), "<") < 0; }
DRIFT_TEST(t_le) { return py_compare(v, operand("le", args), "<=") <= 0; }
DRIFT_TEST(t_gt) { return py_compare(v, operand("gt", args), ">") > 0; }
DRIFT_TEST(t_ge) { return py_compare(v, operand("ge", args), ">=") >= 0; }
DRIFT_TEST(t_in) { return contains(operand("in", args), v); }
DRIFT_TEST(t_filter) { return v.is_string() && find_filter(v.as_string()) != nullptr && !args.positional.size(); }
DRIFT_TEST(t_test) { return v.is_string() && find_test(v.as_string()) != nullptr && !args.positional.size(); }
// `is sameas`: Python identity; None, booleans and equal small values are the same object.
DRIFT_TEST(t_sameas) {
  const Value& other = operand("sameas", args);
  if (v.kind() != other.kind()) return false;
  if (v.is_none() || v.is_undefined()) return true;
  if (v.is_bool()) return v.as_bool() == other.as_bool();
  if (v.identity()) return v.identity() == other.identity();
  return py_equal(v, other);
}

#undef DRIFT_TEST

TestTable build_table() {
  TestTable t;
  t["defined"] = t_defined;
  t["undefined"] = t_undefined;
  t["none"] = t_none;
  t["boolean"] = t_boolean;
  t["true"] = t_true;
  t["false"] = t_false;
  t["integer"] = t_integer;
  t["float"] = t_float;
  t["number"] = t_number;
  t["string"] = t_string;
  t["mapping"] = t_mapping;
  t["sequence"] = t_sequence;
  t["iterable"] = t_iterable;
  t["callable"] = t_callable;
  t["escaped"] = t_escaped;
  t["lower"] = t_lower;
  t["upper"] = t_upper;
  t["odd"] = t_odd;
  t["even"] = t_even;
  t["divisibleby"] = t_divisibleby;
  t["eq"] = t["=="] = t["equalto"] = t_eq;
  t["ne"] = t["!="] = t_ne;
  t["lt"] = t["<"] = t["lessthan"] = t_lt;
  t["le"] = t["<="] = t_le;
  t["gt"] = t[">"] = t["greaterthan"] = t_gt;
  t["ge"] = t[">="] = t_ge;
  t["in"] = t_in;
  t["filter"] = t_filter;
  t["test"] = t_test;
  t["sameas"] = t_sameas;
  return t;
}

}  // namespace

TestFn find_test(std::string_view name) {
  static const TestTable table = build_table();
  auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

bool Evaluator::apply_test(const std::string& name, const Value& input, CallArgs& args) {
  TestFn test = find_test(name);
  if (!test) raise(ErrorType::kAssertion, fmt::format("No test named '{}'.", name));
  return test(*this, input, args);
}

}  // namespace drift::jinja
