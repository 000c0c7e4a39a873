#include "core/chat_template/py_format.h"

#include <cctype>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "core/chat_template/py_text.h"
#include "core/chat_template/value_access.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

// One %-conversion's flags, width and precision.
struct PercentSpec {
  std::string flags;
  std::optional<int> width;
  std::optional<int> precision;
  char type = 's';
};

// Pads `text` to the spec's width (code points), left-aligned with the '-' flag.
std::string pad(const std::string& text, const PercentSpec& spec, bool numeric) {
  const int width = spec.width.value_or(0);
  const int len = static_cast<int>(code_point_count(text));
  if (len >= width) return text;
  const bool left = spec.flags.find('-') != std::string::npos;
  if (left) return text + std::string(width - len, ' ');
  if (numeric && spec.flags.find('0') != std::string::npos) {
    const size_t sign = (!text.empty() && (text[0] == '-' || text[0] == '+' || text[0] == ' ')) ? 1 : 0;
    return text.substr(0, sign) + std::string(width - len, '0') + text.substr(sign);
  }
  return std::string(width - len, ' ') + text;
}

std::string c_format(const PercentSpec& spec, char type, double number) {
  std::string f = "%";
  for (char c : spec.flags)
    if (c == '+' || c == ' ' || c == '#') f.push_back(c);
  if (spec.precision) f += "." + std::to_string(*spec.precision);
  f.push_back(type);
  char buf[512];
  std::snprintf(buf, sizeof(buf), f.c_str(), number);
  return buf;
}

std::string c_format_int(const PercentSpec& spec, char type, int64_t number) {
  std::string f = "%";
  for (char c : spec.flags)
    if (c == '+' || c == ' ' || c == '#') f.push_back(c);
  if (spec.precision) f += "." + std::to_string(*spec.precision);
  f += "ll";
  f.push_back(type);
  char buf[128];
  std::snprintf(buf, sizeof(buf), f.c_str(), static_cast<long long>(number));
  std::string out = buf;
  if (type == 'o' && spec.flags.find('#') != std::string::npos) out = "0o" + out.substr(out[0] == '0' ? 1 : 0);
  return out;
}

std::string convert(const PercentSpec& spec, const Value& v, bool markup) {
  switch (spec.type) {
    case 's':
    case 'r':
    case 'a': {
      std::string text = spec.type == 's' ? py_str(v) : py_repr(v);
      if (markup && !v.is_markup()) text = html_escape(text);
      if (spec.precision) text = text.substr(0, byte_offset_of(text, *spec.precision));
      return pad(text, spec, false);
    }
    case 'c':
      if (v.is_string()) return pad(v.as_string(), spec, false);
      if (v.is_integral()) {
        std::string s;
        append_code_point(s, static_cast<char32_t>(v.as_int()));
        return pad(s, spec, false);
      }
      raise(ErrorType::kType, "%c requires int or char");
    default:
      break;
  }
  if (!v.is_number())
    raise(ErrorType::kType, fmt::format("%{} format: a real number is required, not {}", spec.type, type_name(v)));
  switch (spec.type) {
    case 'd':
    case 'i':
    case 'u':
      return pad(c_format_int(spec, 'd', v.is_float() ? static_cast<int64_t>(v.as_float()) : v.as_int()), spec, true);
    case 'o':
    case 'x':
    case 'X':
      if (v.is_float())
        raise(ErrorType::kType, fmt::format("%{} format: an integer is required, not float", spec.type));
      return pad(c_format_int(spec, spec.type, v.as_int()), spec, true);
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G':
      return pad(c_format(spec, spec.type, v.as_float()), spec, true);
    default:
      raise(ErrorType::kValue, fmt::format("unsupported format character '{}'", spec.type));
  }
}

// Parses one conversion after '%' at `pos`; `next_arg` supplies '*' widths.
PercentSpec parse_spec(const std::string& f, size_t& pos, const std::function<Value()>& next_arg) {
  PercentSpec spec;
  while (pos < f.size() && std::string("-+ #0").find(f[pos]) != std::string::npos) spec.flags.push_back(f[pos++]);
  auto number = [&]() -> std::optional<int> {
    if (pos < f.size() && f[pos] == '*') {
      ++pos;
      return static_cast<int>(next_arg().as_int());
    }
    if (pos >= f.size() || !std::isdigit(static_cast<unsigned char>(f[pos]))) return std::nullopt;
    int n = 0;
    while (pos < f.size() && std::isdigit(static_cast<unsigned char>(f[pos]))) n = n * 10 + (f[pos++] - '0');
    return n;
  };
  spec.width = number();
  if (pos < f.size() && f[pos] == '.') {
    ++pos;
    spec.precision = number().value_or(0);
  }
  while (pos < f.size() && (f[pos] == 'l' || f[pos] == 'h' || f[pos] == 'L')) ++pos;
  if (pos >= f.size()) raise(ErrorType::kValue, "incomplete format");
  spec.type = f[pos++];
  return spec;
}

}  // namespace

Value percent_format(const Value& format, const Value& args) {
  const std::string& f = format.as_string();
  const bool markup = format.is_markup();
  const ValueList positional = args.is_tuple() ? args.items() : ValueList{args};
  size_t next = 0;
  auto next_arg = [&]() -> Value {
    if (next >= positional.size()) raise(ErrorType::kType, "not enough arguments for format string");
    return positional[next++];
  };
  bool used_mapping = false;
  std::string out;
  for (size_t pos = 0; pos < f.size();) {
    if (f[pos] != '%') {
      out.push_back(f[pos++]);
      continue;
    }
    ++pos;
    if (pos < f.size() && f[pos] == '%') {
      out.push_back('%');
      ++pos;
      continue;
    }
    std::optional<std::string> key;
    if (pos < f.size() && f[pos] == '(') {
      const size_t close = f.find(')', pos);
      if (close == std::string::npos) raise(ErrorType::kValue, "incomplete format key");
      key = f.substr(pos + 1, close - pos - 1);
      pos = close + 1;
    }
    const PercentSpec spec = parse_spec(f, pos, next_arg);
    if (key) {
      if (!args.is_dict()) raise(ErrorType::kType, "format requires a mapping");
      const Value* v = args.as_dict().find(*key);
      if (!v) raise(ErrorType::kValue, fmt::format("KeyError: {}", py_string_repr(*key)));
      used_mapping = true;
      out += convert(spec, *v, markup);
    } else {
      out += convert(spec, next_arg(), markup);
    }
  }
  if (!used_mapping && !args.is_dict() && next < positional.size())
    raise(ErrorType::kType, "not all arguments converted during string formatting");
  return Value::string(std::move(out), markup);
}

namespace {

// A field's value: "0", "name", then .attr / [key] steps.
Value resolve_field(Evaluator& ev, const std::string& field, const CallArgs& args, size_t& auto_index) {
  size_t end = field.find_first_of(".[");
  const std::string head = field.substr(0, end);
  Value v;
  if (head.empty()) {
    if (auto_index >= args.positional.size())
      raise(ErrorType::kValue, fmt::format("Replacement index {} out of range for positional args tuple", auto_index));
    v = args.positional[auto_index++];
  } else if (std::isdigit(static_cast<unsigned char>(head[0]))) {
    const size_t index = std::stoul(head);
    if (index >= args.positional.size())
      raise(ErrorType::kValue, fmt::format("Replacement index {} out of range for positional args tuple", index));
    v = args.positional[index];
  } else {
    bool found = false;
    for (const auto& [name, value] : args.keywords)
      if (name == head) {
        v = value;
        found = true;
      }
    if (!found) raise(ErrorType::kValue, fmt::format("KeyError: {}", py_string_repr(head)));
  }
  while (end != std::string::npos && end < field.size()) {
    if (field[end] == '.') {
      const size_t next = field.find_first_of(".[", end + 1);
      v = get_attribute(ev, v, field.substr(end + 1, next - end - 1));
      end = next;
    } else {
      const size_t close = field.find(']', end);
      const std::string key = field.substr(end + 1, close - end - 1);
      const bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      v = get_item(ev, v, numeric ? Value::integer(std::stoll(key)) : Value::string(key));
      end = close + 1;
    }
  }
  return v;
}

std::string format_with_spec(const Value& v, const std::string& spec) {
  if (spec.empty()) return py_str(v);
  if (v.is_string()) return fmt::format(fmt::runtime("{:" + spec + "}"), v.as_string());
  if (v.is_float() || (v.is_number() && spec.find_first_of("eEfFgG%") != std::string::npos))
    return fmt::format(fmt::runtime("{:" + spec + "}"), v.as_float());
  if (v.is_integral()) return fmt::format(fmt::runtime("{:" + spec + "}"), v.as_int());
  return fmt::format(fmt::runtime("{:" + spec + "}"), py_str(v));
}

}  // namespace

std::string str_format(Evaluator& ev, const std::string& f, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t pos = 0; pos < f.size();) {
    const char c = f[pos];
    if (c == '}') {
      if (pos + 1 < f.size() && f[pos + 1] == '}') {
        out.push_back('}');
        pos += 2;
        continue;
      }
      raise(ErrorType::kValue, "Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++pos;
      continue;
    }
    if (pos + 1 < f.size() && f[pos + 1] == '{') {
      out.push_back('{');
      pos += 2;
      continue;
    }
    const size_t close = f.find('}', pos);
    if (close == std::string::npos) raise(ErrorType::kValue, "Single '{' encountered in format string");
    std::string field = f.substr(pos + 1, close - pos - 1);
    pos = close + 1;
    std::string spec;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    char conversion = 0;
    if (field.size() >= 2 && field[field.size() - 2] == '!') {
      conversion = field.back();
      field.resize(field.size() - 2);
    }
    const Value v = resolve_field(ev, field, args, auto_index);
    if (conversion == 'r' || conversion == 'a') {
      out += format_with_spec(Value::string(py_repr(v)), spec);
    } else if (conversion == 's') {
      out += format_with_spec(Value::string(py_str(v)), spec);
    } else {
      out += format_with_spec(v, spec);
    }
  }
  return out;
}

}  // namespace drift::jinja
