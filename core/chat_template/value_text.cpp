// str(), repr() and type names of Values, as Python prints them.
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

std::string join_reprs(const ValueList& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += py_repr(items[i]);
  }
  return out;
}

std::string sequence_repr(const Value& v) {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
  std::string out = v.is_tuple() ? "(" : "[";
  out += join_reprs(v.items());
  // A one-element tuple keeps its trailing comma: ('a',).
  out += !v.is_tuple() ? "]" : v.items().size() == 1 ? ",)" : ")";
  return out;
}

std::string dict_repr(const Dict& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : d.entries()) {
    if (!first) out += ", ";
    first = false;
    out += py_repr(key) + ": " + py_repr(value);
  }
  return out + "}";
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form ("1.2345e+02"), re-laid out by Python's rule:
  // positional when the decimal exponent is in [-4, 16), else scientific.
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string text(buf, result.ptr);
  const bool negative = text[0] == '-';
  const size_t e = text.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits.push_back(text[i]);
  const int exponent = std::atoi(text.c_str() + e + 1);
  const int point = exponent + 1;  // digits[0:point] lie before the decimal point
  const int n = static_cast<int>(digits.size());
  std::string out = negative ? "-" : "";
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out += "0." + std::string(-point, '0') + digits;
    } else if (point >= n) {
      out += digits + std::string(point - n, '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) out.append(".").append(digits, 1);
  const int shown = point - 1;
  out += shown < 0 ? "e-" : "e+";
  const std::string magnitude = std::to_string(std::abs(shown));
  return out + (magnitude.size() < 2 ? "0" : "") + magnitude;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '"':
        out += "&#34;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kString:
      return v.as_string();
    default:
      return py_repr(v);
  }
}

std::string py_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return float_repr(v.as_float());
    case Value::Kind::kString:
      return v.is_markup() ? "Markup(" + py_string_repr(v.as_string()) + ")" : py_string_repr(v.as_string());
    case Value::Kind::kList:
      if (v.is_iterator()) return "<" + v.iterator_type() + " object at 0x7f0000000000>";
      return sequence_repr(v);
    case Value::Kind::kDict:
      return dict_repr(v.as_dict());
    case Value::Kind::kNamespace:
      return "<Namespace " + dict_repr(v.namespace_attrs()) + ">";
    case Value::Kind::kCallable:
      return v.as_callable().repr;
    case Value::Kind::kObject:
      return v.as_object().repr();
  }
  return "";
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return v.is_markup() ? "Markup" : "str";
    case Value::Kind::kList:
      if (v.is_iterator()) return v.iterator_type();
      return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "TemplateNamespace";
    case Value::Kind::kCallable:
      return v.as_callable().repr.rfind("<Macro", 0) == 0 ? "Macro" : "builtin_function_or_method";
    case Value::Kind::kObject:
      return v.as_object().type_name();
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kUndefined:
      return "jinja2.runtime.Undefined object";
    case Value::Kind::kString:
      return v.is_markup() ? "markupsafe.Markup object" : "str object";
    case Value::Kind::kNamespace:
      return "transformers.utils.chat_template_utils.TemplateNamespace object";
    case Value::Kind::kCallable:
      return type_name(v) == "Macro" ? "jinja2.runtime.Macro object" : "builtin_function_or_method object";
    case Value::Kind::kObject:
      return v.as_object().type_repr();
    default:
      return type_name(v) + " object";
  }
}

}  // namespace drift::jinja
