// Python str methods (strip, split, startswith, replace, ...), as templates call them.
#include <algorithm>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/methods.h"
#include "core/chat_template/py_format.h"
#include "core/chat_template/py_text.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

using StrMethod = Value (*)(const Value& self, Evaluator& ev, const CallArgs& args);

const std::string& text(const Value& self) { return self.as_string(); }

// Markup methods return Markup, like markupsafe's wrappers.
Value same_kind(const Value& self, std::string s) { return Value::string(std::move(s), self.is_markup()); }

std::optional<std::string> optional_chars(const BoundArgs& a, size_t i, const char* fn) {
  if (!a.has(i) || a[i].is_none()) return std::nullopt;
  if (!a[i].is_string()) raise(ErrorType::kType, fmt::format("{} arg must be None or str", fn));
  return a[i].as_string();
}

std::optional<int64_t> optional_index(const BoundArgs& a, size_t i) {
  if (!a.has(i) || a[i].is_none()) return std::nullopt;
  return a.get_int(i, 0);
}

Value strip_impl(const Value& self, const CallArgs& args, const char* name, bool left, bool right) {
  BoundArgs a(name, args, {"chars"});
  return same_kind(self, py_strip(text(self), optional_chars(a, 0, name), left, right));
}

Value string_list(const Value& self, const std::vector<std::string>& parts) {
  ValueList out;
  for (const std::string& p : parts) out.push_back(same_kind(self, p));
  return Value::list(std::move(out));
}

Value split_impl(const Value& self, const CallArgs& args, bool reverse) {
  BoundArgs a(reverse ? "rsplit" : "split", args, {"sep", "maxsplit"});
  const std::optional<std::string> sep = optional_chars(a, 0, "split");
  if (sep && sep->empty()) raise(ErrorType::kValue, "empty separator");
  const int64_t maxsplit = a.get_int(1, -1);
  return string_list(self, reverse ? py_rsplit(text(self), sep, maxsplit) : py_split(text(self), sep, maxsplit));
}

// startswith / endswith: a prefix or a tuple of them, over an optional [start, end) range.
Value affix_impl(const Value& self, const CallArgs& args, bool suffix) {
  const char* name = suffix ? "endswith" : "startswith";
  BoundArgs a(name, args, {"prefix", "start", "end"}, 1);
  const std::u32string all = to_code_points(text(self));
  const auto n = static_cast<int64_t>(all.size());
  auto clamp = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  const int64_t lo = a.has(1) && !a[1].is_none() ? clamp(a.get_int(1, 0)) : 0;
  const int64_t hi = a.has(2) && !a[2].is_none() ? clamp(a.get_int(2, n)) : n;
  if (lo > hi) return Value::boolean(false);
  const std::string range = from_code_points(std::u32string_view(all).substr(lo, hi - lo));
  auto matches = [&](const Value& candidate) {
    if (!candidate.is_string())
      raise(ErrorType::kType,
            fmt::format("{} first arg must be str or a tuple of str, not {}", name, type_name(candidate)));
    const std::string& c = candidate.as_string();
    if (c.size() > range.size()) return false;
    return suffix ? range.compare(range.size() - c.size(), c.size(), c) == 0 : range.compare(0, c.size(), c) == 0;
  };
  if (a[0].is_tuple()) {
    for (const Value& candidate : a[0].items())
      if (matches(candidate)) return Value::boolean(true);
    return Value::boolean(false);
  }
  return Value::boolean(matches(a[0]));
}

Value find_impl(const Value& self, const CallArgs& args, const char* name, bool reverse, bool raise_missing) {
  BoundArgs a(name, args, {"sub", "start", "end"}, 1);
  const int64_t at = py_find(text(self), a.get_string(0, ""), optional_index(a, 1), optional_index(a, 2), reverse);
  if (at < 0 && raise_missing) raise(ErrorType::kValue, "substring not found");
  return Value::integer(at);
}

Value justify(const Value& self, const CallArgs& args, const char* name, int mode) {
  BoundArgs a(name, args, {"width", "fillchar"}, 1);
  const int64_t width = a.get_int(0, 0);
  const std::string fill = a.get_string(1, " ");
  const auto len = static_cast<int64_t>(code_point_count(text(self)));
  if (width <= len) return self;
  const int64_t total = width - len;
  // str.center: the odd extra fill goes left only when the width is odd (CPython's rule).
  const int64_t left = mode < 0 ? 0 : mode > 0 ? total : total / 2 + (total & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += text(self);
  for (int64_t i = 0; i < total - left; ++i) out += fill;
  return same_kind(self, std::move(out));
}

template <bool (*Pred)(char32_t)>
Value all_chars(const Value& self, const CallArgs& args) {
  expect_no_args("is...", args);
  const std::u32string points = to_code_points(text(self));
  if (points.empty()) return Value::boolean(false);
  for (char32_t c : points)
    if (!Pred(c)) return Value::boolean(false);
  return Value::boolean(true);
}

Value partition_impl(const Value& self, const CallArgs& args, bool reverse) {
  BoundArgs a(reverse ? "rpartition" : "partition", args, {"sep"}, 1);
  const std::string sep = a.get_string(0, "");
  if (sep.empty()) raise(ErrorType::kValue, "empty separator");
  const std::string& s = text(self);
  const size_t at = reverse ? s.rfind(sep) : s.find(sep);
  if (at == std::string::npos)
    return reverse ? Value::tuple({same_kind(self, ""), same_kind(self, ""), self})
                   : Value::tuple({self, same_kind(self, ""), same_kind(self, "")});
  return Value::tuple(
      {same_kind(self, s.substr(0, at)), same_kind(self, sep), same_kind(self, s.substr(at + sep.size()))});
}

Value join_impl(const Value& self, const CallArgs& args) {
  BoundArgs a("join", args, {"iterable"}, 1);
  std::string out;
  bool first = true;
  for (const Value& item : iterate(a[0])) {
    if (!item.is_string())
      raise(ErrorType::kType, fmt::format("sequence item: expected str instance, {} found", type_name(item)));
    if (!first) out += text(self);
    first = false;
    out += self.is_markup() && !item.is_markup() ? html_escape(item.as_string()) : item.as_string();
  }
  return same_kind(self, std::move(out));
}

const std::unordered_map<std::string_view, StrMethod>& str_methods() {
  static const std::unordered_map<std::string_view, StrMethod> table = {
      {"strip", [](const Value& s, Evaluator&, const CallArgs& a) { return strip_impl(s, a, "strip", true, true); }},
      {"lstrip", [](const Value& s, Evaluator&, const CallArgs& a) { return strip_impl(s, a, "lstrip", true, false); }},
      {"rstrip", [](const Value& s, Evaluator&, const CallArgs& a) { return strip_impl(s, a, "rstrip", false, true); }},
      {"split", [](const Value& s, Evaluator&, const CallArgs& a) { return split_impl(s, a, false); }},
      {"rsplit", [](const Value& s, Evaluator&, const CallArgs& a) { return split_impl(s, a, true); }},
      {"splitlines",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         BoundArgs b("splitlines", a, {"keepends"});
         return string_list(s, py_splitlines(text(s), b.get_bool(0, false)));
       }},
      {"startswith", [](const Value& s, Evaluator&, const CallArgs& a) { return affix_impl(s, a, false); }},
      {"endswith", [](const Value& s, Evaluator&, const CallArgs& a) { return affix_impl(s, a, true); }},
      {"replace",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         BoundArgs b("replace", a, {"old", "new", "count"}, 2);
         return same_kind(s, py_replace(text(s), b.get_string(0, ""), b.get_string(1, ""), b.get_int(2, -1)));
       }},
      {"upper",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("upper", a);
         return same_kind(s, py_upper(text(s)));
       }},
      {"lower",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("lower", a);
         return same_kind(s, py_lower(text(s)));
       }},
      {"casefold",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("casefold", a);
         return same_kind(s, py_lower(text(s)));
       }},
      {"title",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("title", a);
         return same_kind(s, py_title(text(s)));
       }},
      {"capitalize",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("capitalize", a);
         return same_kind(s, py_capitalize(text(s)));
       }},
      {"swapcase",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("swapcase", a);
         return same_kind(s, py_swapcase(text(s)));
       }},
      {"find", [](const Value& s, Evaluator&, const CallArgs& a) { return find_impl(s, a, "find", false, false); }},
      {"rfind", [](const Value& s, Evaluator&, const CallArgs& a) { return find_impl(s, a, "rfind", true, false); }},
      {"index", [](const Value& s, Evaluator&, const CallArgs& a) { return find_impl(s, a, "index", false, true); }},
      {"rindex", [](const Value& s, Evaluator&, const CallArgs& a) { return find_impl(s, a, "rindex", true, true); }},
      {"count",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         BoundArgs b("count", a, {"sub", "start", "end"}, 1);
         return Value::integer(py_count(text(s), b.get_string(0, ""), optional_index(b, 1), optional_index(b, 2)));
       }},
      {"join", [](const Value& s, Evaluator&, const CallArgs& a) { return join_impl(s, a); }},
      {"isdigit", [](const Value& s, Evaluator&, const CallArgs& a) { return all_chars<py_isdigit>(s, a); }},
      {"isdecimal", [](const Value& s, Evaluator&, const CallArgs& a) { return all_chars<py_isdigit>(s, a); }},
      {"isnumeric", [](const Value& s, Evaluator&, const CallArgs& a) { return all_chars<py_isdigit>(s, a); }},
      {"isalpha", [](const Value& s, Evaluator&, const CallArgs& a) { return all_chars<py_isalpha>(s, a); }},
      {"isalnum", [](const Value& s, Evaluator&, const CallArgs& a) { return all_chars<py_isalnum>(s, a); }},
      {"isspace", [](const Value& s, Evaluator&, const CallArgs& a) { return all_chars<py_isspace>(s, a); }},
      {"islower",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("islower", a);
         return Value::boolean(py_islower(text(s)));
       }},
      {"isupper",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         expect_no_args("isupper", a);
         return Value::boolean(py_isupper(text(s)));
       }},
      {"ljust", [](const Value& s, Evaluator&, const CallArgs& a) { return justify(s, a, "ljust", -1); }},
      {"rjust", [](const Value& s, Evaluator&, const CallArgs& a) { return justify(s, a, "rjust", 1); }},
      {"center", [](const Value& s, Evaluator&, const CallArgs& a) { return justify(s, a, "center", 0); }},
      {"zfill",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         BoundArgs b("zfill", a, {"width"}, 1);
         const std::string& t = text(s);
         const auto len = static_cast<int64_t>(code_point_count(t));
         const int64_t width = b.get_int(0, 0);
         if (width <= len) return s;
         const size_t sign = !t.empty() && (t[0] == '-' || t[0] == '+') ? 1 : 0;
         return same_kind(s, t.substr(0, sign) + std::string(width - len, '0') + t.substr(sign));
       }},
      {"partition", [](const Value& s, Evaluator&, const CallArgs& a) { return partition_impl(s, a, false); }},
      {"rpartition", [](const Value& s, Evaluator&, const CallArgs& a) { return partition_impl(s, a, true); }},
      {"removeprefix",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         BoundArgs b("removeprefix", a, {"prefix"}, 1);
         const std::string p = b.get_string(0, "");
         return text(s).rfind(p, 0) == 0 ? same_kind(s, text(s).substr(p.size())) : s;
       }},
      {"removesuffix",
       [](const Value& s, Evaluator&, const CallArgs& a) {
         BoundArgs b("removesuffix", a, {"suffix"}, 1);
         const std::string p = b.get_string(0, "");
         const std::string& t = text(s);
         const bool ends = !p.empty() && t.size() >= p.size() && t.compare(t.size() - p.size(), p.size(), p) == 0;
         return ends ? same_kind(s, t.substr(0, t.size() - p.size())) : s;
       }},
      {"format",
       [](const Value& s, Evaluator& ev, const CallArgs& a) { return same_kind(s, str_format(ev, text(s), a)); }},
  };
  return table;
}

}  // namespace

std::optional<Value> find_str_method(const Value& object, const std::string& name) {
  const auto& table = str_methods();
  const auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  const StrMethod method = it->second;
  return Value::callable(
      name, [object, method](Evaluator& ev, CallArgs& args) { return method(object, ev, args); },
      fmt::format("<built-in method {} of str object>", name));
}

}  // namespace drift::jinja
