// Python operators on Values: truthiness, ==, ordering, arithmetic, `in`, len(), iteration.
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/chat_template/py_format.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

const char* op_symbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported_operands(BinaryOp op, const Value& a, const Value& b) {
  raise(ErrorType::kType,
        fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op_symbol(op), type_name(a), type_name(b)));
}

// Markup + str escapes the plain side, as markupsafe does.
Value add_strings(const Value& a, const Value& b) {
  if (!a.is_markup() && !b.is_markup()) return Value::string(a.as_string() + b.as_string());
  const std::string left = a.is_markup() ? a.as_string() : html_escape(a.as_string());
  const std::string right = b.is_markup() ? b.as_string() : html_escape(b.as_string());
  return Value::string(left + right, true);
}

// Python integers are unbounded; ours are 64-bit. A result that does not fit is an OverflowError
// (never undefined behaviour), and a repeated sequence is capped, so no template -- whatever file
// it came from -- can exhaust memory or loop for ever.
constexpr int64_t kMaxRepeatedBytes = int64_t{64} << 20;

[[noreturn]] void integer_overflow() {
  raise(ErrorType::kOverflow, "integer result does not fit in 64 bits (DriftEngine's templates use 64-bit integers)");
}

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) integer_overflow();
  return r;
}

int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) integer_overflow();
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) integer_overflow();
  return r;
}

int64_t checked_pow(int64_t base, int64_t exponent) {
  if (base == 0 || base == 1) return exponent == 0 ? 1 : base;
  if (base == -1) return exponent % 2 == 0 ? 1 : -1;
  int64_t result = 1;  // |base| >= 2: overflows within 64 steps, so the loop is short
  for (int64_t i = 0; i < exponent; ++i) result = checked_mul(result, base);
  return result;
}

Value add(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) return add_strings(a, b);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return Value::integer(checked_add(a.as_int(), b.as_int()));
    return Value::number(a.as_float() + b.as_float());
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    ValueList items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (a.is_string() || a.is_list())
    raise(ErrorType::kType,
          fmt::format("can only concatenate {} (not \"{}\") to {}", a.is_string() ? "str" : type_name(a), type_name(b),
                      a.is_string() ? "str" : type_name(a)));
  unsupported_operands(BinaryOp::kAdd, a, b);
}

Value repeat(const Value& sequence, int64_t times) {
  const auto unit = static_cast<int64_t>(sequence.is_string() ? sequence.as_string().size() : sequence.items().size());
  if (times > 0 && unit > 0 && times > kMaxRepeatedBytes / unit)
    raise(ErrorType::kOverflow,
          fmt::format("repeating a sequence of {} {} times is beyond DriftEngine's limit", unit, times));
  if (sequence.is_string()) {
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
    return Value::string(std::move(out), sequence.is_markup());
  }
  ValueList items;
  for (int64_t i = 0; i < times; ++i) items.insert(items.end(), sequence.items().begin(), sequence.items().end());
  return sequence.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value multiply(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return Value::integer(checked_mul(a.as_int(), b.as_int()));
    return Value::number(a.as_float() * b.as_float());
  }
  if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(a, b.as_int());
  if ((b.is_string() || b.is_list()) && a.is_integral()) return repeat(b, a.as_int());
  if (a.is_string() || a.is_list() || b.is_string() || b.is_list())
    raise(ErrorType::kType, fmt::format("can't multiply sequence by non-int of type '{}'",
                                        type_name(a.is_string() || a.is_list() ? b : a)));
  unsupported_operands(BinaryOp::kMul, a, b);
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) integer_overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value arithmetic(BinaryOp op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) unsupported_operands(op, a, b);
  const bool ints = a.is_integral() && b.is_integral();
  const double x = a.as_float();
  const double y = b.as_float();
  switch (op) {
    case BinaryOp::kSub:
      return ints ? Value::integer(checked_sub(a.as_int(), b.as_int())) : Value::number(x - y);
    case BinaryOp::kDiv:
      if (y == 0) raise(ErrorType::kZeroDivision, ints ? "division by zero" : "float division by zero");
      return Value::number(x / y);
    case BinaryOp::kFloorDiv:
      if (y == 0)
        raise(ErrorType::kZeroDivision, ints ? "integer division or modulo by zero" : "float floor division by zero");
      return ints ? Value::integer(floor_div(a.as_int(), b.as_int())) : Value::number(std::floor(x / y));
    case BinaryOp::kMod: {
      if (y == 0) raise(ErrorType::kZeroDivision, ints ? "integer division or modulo by zero" : "float modulo");
      if (ints) return Value::integer(a.as_int() - checked_mul(floor_div(a.as_int(), b.as_int()), b.as_int()));
      double r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return Value::number(r);
    }
    case BinaryOp::kPow:
      if (ints && b.as_int() >= 0) return Value::integer(checked_pow(a.as_int(), b.as_int()));
      return Value::number(std::pow(x, y));
    default:
      unsupported_operands(op, a, b);
  }
}

int compare_numbers(double a, double b) { return a < b ? -1 : (a > b ? 1 : 0); }

}  // namespace

bool truthy(const Value& v) {
  if (v.is_iterator()) return true;
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_float() != 0.0;
    case Value::Kind::kString:
      return !v.as_string().empty();
    case Value::Kind::kList:
      return !v.items().empty();
    case Value::Kind::kDict:
      return !v.as_dict().empty();
    default:
      return true;
  }
}

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_iterator() || b.is_iterator()) return a.identity() == b.identity();
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i)
        if (!py_equal(a.items()[i], b.items()[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [key, value] : a.as_dict().entries()) {
        const Value* other = b.as_dict().find(key);
        if (!other || !py_equal(value, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

int py_compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) a.raise_undefined();
  if (b.is_undefined()) b.raise_undefined();
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    return compare_numbers(a.as_float(), b.as_float());
  }
  // UTF-8 byte order is code point order, which is how Python orders str.
  if (a.is_string() && b.is_string())
    return a.as_string().compare(b.as_string()) < 0 ? -1 : (a.as_string() == b.as_string() ? 0 : 1);
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.items();
    const ValueList& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!py_equal(x[i], y[i])) return py_compare(x[i], y[i], op);
    return compare_numbers(static_cast<double>(x.size()), static_cast<double>(y.size()));
  }
  raise(ErrorType::kType,
        fmt::format("'{}' not supported between instances of '{}' and '{}'", op, type_name(a), type_name(b)));
}

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) a.raise_undefined();
  if (b.is_undefined()) b.raise_undefined();
  switch (op) {
    case BinaryOp::kAdd:
      return add(a, b);
    case BinaryOp::kMul:
      return multiply(a, b);
    case BinaryOp::kMod:
      if (a.is_string()) return percent_format(a, b);
      return arithmetic(op, a, b);
    default:
      return arithmetic(op, a, b);
  }
}

Value negate(const Value& v) {
  if (v.is_undefined()) v.raise_undefined();
  if (v.is_integral()) return Value::integer(checked_sub(0, v.as_int()));
  if (v.is_float()) return Value::number(-v.as_float());
  raise(ErrorType::kType, fmt::format("bad operand type for unary -: '{}'", type_name(v)));
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) v.raise_undefined();
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) return v;
  raise(ErrorType::kType, fmt::format("bad operand type for unary +: '{}'", type_name(v)));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string())
        raise(ErrorType::kType, fmt::format("'in <string>' requires string as left operand, not {}", type_name(item)));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.items())
        if (py_equal(v, item)) return true;
      return false;
    case Value::Kind::kDict:
      return container.as_dict().find(item) != nullptr;
    default:
      raise(ErrorType::kType, fmt::format("argument of type '{}' is not iterable", type_name(container)));
  }
}

int64_t length(const Value& v) {
  if (v.is_iterator()) raise(ErrorType::kType, fmt::format("object of type '{}' has no len()", type_name(v)));
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(code_point_count(v.as_string()));
    case Value::Kind::kList:
      return static_cast<int64_t>(v.items().size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.as_dict().size());
    default:
      raise(ErrorType::kType, fmt::format("object of type '{}' has no len()", type_name(v)));
  }
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.items();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& entry : v.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (char32_t c : to_code_points(v.as_string())) {
        std::string s;
        append_code_point(s, c);
        chars.push_back(Value::string(std::move(s)));
      }
      return chars;
    }
    default:
      raise(ErrorType::kType, fmt::format("'{}' object is not iterable", type_name(v)));
  }
}

}  // namespace drift::jinja
