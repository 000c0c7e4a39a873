// String and number filters: trim, case mapping, replace, indent, center, wordcount, format,
// escape / safe, string, int / float / abs / round, and transformers' tojson.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/filters.h"
#include "core/chat_template/json_dump.h"
#include "core/chat_template/py_format.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

Value str_value(std::string s) { return Value::string(std::move(s)); }

Value f_trim(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("trim", args, {"chars"});
  std::optional<std::string> chars;
  if (a.has(0) && !a[0].is_none()) chars = a.get_string(0, "");
  return str_value(py_strip(py_str(v), chars, true, true));
}

Value f_lower(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("lower", args);
  return str_value(py_lower(py_str(v)));
}

Value f_upper(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("upper", args);
  return str_value(py_upper(py_str(v)));
}

Value f_capitalize(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("capitalize", args);
  return str_value(py_capitalize(py_str(v)));
}

// jinja2's title: each chunk after a run of [-\s({\[<] gets its first character upper-cased and
// the rest lower-cased (not str.title, which splits at every non-letter).
Value f_title(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("title", args);
  const std::u32string s = to_code_points(py_str(v));
  auto is_split = [](char32_t c) { return py_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
  std::u32string out;
  bool word_start = true;
  for (char32_t c : s) {
    if (is_split(c)) {
      out.push_back(c);
      word_start = true;
    } else {
      out.push_back(word_start ? py_to_upper(c) : py_to_lower(c));
      word_start = false;
    }
  }
  return str_value(from_code_points(out));
}

Value f_replace(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  return str_value(py_replace(py_str(v), py_str(a[0]), py_str(a[1]), a.get_int(2, -1)));
}

Value f_string(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("string", args);
  return v.is_string() ? v : str_value(py_str(v));
}

Value f_safe(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("safe", args);
  return Value::string(py_str(v), true);
}

Value f_escape(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("escape", args);
  if (v.is_markup()) return v;
  return Value::string(html_escape(py_str(v)), true);
}

Value f_indent(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  const std::string indention =
      a.has(0) && a[0].is_string() ? a[0].as_string() : std::string(static_cast<size_t>(a.get_int(0, 4)), ' ');
  const std::vector<std::string> lines = py_splitlines(py_str(v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    const bool indent_line = a.get_bool(2, false) || !lines[i].empty();
    out += (i > 0 && indent_line ? indention : "") + lines[i];
  }
  if (a.get_bool(1, false)) out = indention + out;
  return str_value(std::move(out));
}

// str.center(width): CPython puts the extra space on the left when the padding and width are odd.
Value f_center(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("center", args, {"width"});
  const std::string s = py_str(v);
  const int64_t width = a.get_int(0, 80);
  const auto n = static_cast<int64_t>(code_point_count(s));
  if (width <= n) return str_value(s);
  const int64_t margin = width - n;
  const int64_t left = margin / 2 + (margin & width & 1);
  return str_value(std::string(static_cast<size_t>(left), ' ') + s +
                   std::string(static_cast<size_t>(margin - left), ' '));
}

Value f_wordcount(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("wordcount", args);
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : to_code_points(py_str(v))) {
    const bool word_char = py_isalnum(c) || c == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::integer(words);
}

Value f_format(Evaluator&, const Value& v, const CallArgs& args) {
  if (!args.positional.empty() && !args.keywords.empty())
    raise(ErrorType::kRuntime, "can't handle positional and keyword arguments at the same time");
  if (!args.keywords.empty()) {
    Dict d;
    for (const auto& [key, value] : args.keywords) d.set(Value::string(key), value);
    return percent_format(Value::string(py_str(v)), Value::dict(std::move(d)));
  }
  return percent_format(Value::string(py_str(v)), Value::tuple(args.positional));
}

// Python's int(str, base): surrounding whitespace, a sign and "_" between digits are allowed.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[i - 1]))) continue;
    digits.push_back(s[i]);
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno != 0 || std::isspace(static_cast<unsigned char>(digits[0]))) return std::nullopt;
  return value;
}

std::optional<double> parse_float(const Value& v) {
  if (v.is_number()) return v.as_float();
  if (!v.is_string()) return std::nullopt;
  const std::string s = py_strip(v.as_string(), std::nullopt, true, true);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return d;
}

Value f_int(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_string())
    if (std::optional<int64_t> i = parse_int(v.as_string(), static_cast<int>(a.get_int(1, 10))))
      return Value::integer(*i);
  if (std::optional<double> d = parse_float(v); d && std::isfinite(*d)) return Value::integer(static_cast<int64_t>(*d));
  return a.get_or(0, Value::integer(0));
}

Value f_float(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  if (std::optional<double> d = parse_float(v)) return Value::number(*d);
  return a.get_or(0, Value::number(0.0));
}

Value f_abs(Evaluator&, const Value& v, const CallArgs& args) {
  expect_no_args("abs", args);
  if (v.is_integral() && v.as_int() == INT64_MIN)
    raise(ErrorType::kOverflow, "abs() of the smallest 64-bit integer does not fit");
  if (v.is_integral()) return Value::integer(std::llabs(v.as_int()));
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  raise(ErrorType::kType, fmt::format("bad operand type for abs(): '{}'", type_name(v)));
}

// Python's round(x, n) rounds the exact binary value half-to-even; printf does the same.
double round_decimal(double x, int64_t precision) {
  if (precision > 300 || !std::isfinite(x)) return x;
  if (precision < 0) {
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return std::nearbyint(x / scale) * scale;
  }
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);
  return std::strtod(buf, nullptr);
}

Value f_round(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  const int64_t precision = a.get_int(0, 0);
  const std::string method = a.get_string(1, "common");
  if (method != "common" && method != "ceil" && method != "floor")
    raise(ErrorType::kRuntime, "method must be common, ceil or floor");
  if (!v.is_number()) raise(ErrorType::kType, fmt::format("type {} doesn't define __round__ method", type_name(v)));
  if (method == "common") {
    if (v.is_integral()) return Value::integer(v.as_int());
    return Value::number(round_decimal(v.as_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.as_float() * scale;
  return Value::number((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
Value f_tojson(Evaluator&, const Value& v, const CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions options;
  options.ensure_ascii = a.get_bool(0, false);
  if (a.has(1) && !a[1].is_none()) {
    if (a[1].is_string()) {
      options.indent = a[1].as_string();
    } else if (a[1].is_integral()) {
      options.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, a[1].as_int())), ' ');
    } else {
      raise(ErrorType::kType, fmt::format("indent must be int or str, not {}", type_name(a[1])));
    }
  }
  if (a.has(2) && !a[2].is_none()) {
    if (!a[2].is_list() || a[2].items().size() != 2 || !a[2].items()[0].is_string() || !a[2].items()[1].is_string())
      raise(ErrorType::kValue, "separators must be a pair of strings");
    options.item_separator = a[2].items()[0].as_string();
    options.key_separator = a[2].items()[1].as_string();
  }
  options.sort_keys = a.get_bool(3, false);
  return str_value(json_dumps(v, options));
}

}  // namespace

void add_text_filters(FilterTable& table) {
  table["trim"] = f_trim;
  table["lower"] = f_lower;
  table["upper"] = f_upper;
  table["capitalize"] = f_capitalize;
  table["title"] = f_title;
  table["replace"] = f_replace;
  table["string"] = f_string;
  table["safe"] = f_safe;
  table["escape"] = f_escape;
  table["e"] = f_escape;
  table["indent"] = f_indent;
  table["center"] = f_center;
  table["wordcount"] = f_wordcount;
  table["format"] = f_format;
  table["int"] = f_int;
  table["float"] = f_float;
  table["abs"] = f_abs;
  table["round"] = f_round;
  table["tojson"] = f_tojson;
}

}  // namespace drift::jinja
