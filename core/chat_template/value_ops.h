#pragma once
// Python semantics of Values: truthiness, ==, ordering, arithmetic, `in`, len(), iteration,
// str() / repr() and type names (for error messages that read like Python's).
#include <string>

#include "core/chat_template/value.h"

namespace drift::jinja {

bool truthy(const Value& v);
bool py_equal(const Value& a, const Value& b);
// -1, 0 or 1 for a < b, a == b, a > b; TypeError naming `op` when Python cannot order them.
int py_compare(const Value& a, const Value& b, const char* op);

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
Value binary_op(BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
// `item in container`.
bool contains(const Value& container, const Value& item);
// len(); TypeError for values without one (an undefined value has length 0).
int64_t length(const Value& v);
// The items a for loop visits: list/tuple items, dict keys, str characters; undefined: none.
ValueList iterate(const Value& v);

// Python type name: "NoneType", "int", "str", "dict", "Markup", ...
std::string type_name(const Value& v);
// jinja2's object_type_repr: "None", "dict object", "jinja2.runtime.LoopContext object", ...
std::string object_type_repr(const Value& v);

// str() and repr(). str() of an undefined value is "".
std::string py_str(const Value& v);
std::string py_repr(const Value& v);
// repr() of a float: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string float_repr(double d);

// markupsafe.escape(): & < > ' " as HTML entities.
std::string html_escape(std::string_view s);

}  // namespace drift::jinja
