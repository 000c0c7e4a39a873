#include "core/chat_template/globals.h"

#include <ctime>

#include <fmt/format.h>

#include "core/chat_template/call_args.h"
#include "core/chat_template/runtime_objects.h"
#include "core/chat_template/value_ops.h"

namespace drift::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

int64_t range_arg(const Value& v) {
  if (!v.is_integral())
    raise(ErrorType::kType, fmt::format("'{}' object cannot be interpreted as an integer", type_name(v)));
  return v.as_int();
}

Value g_range(Evaluator&, CallArgs& args) {
  if (!args.keywords.empty()) raise(ErrorType::kType, "range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3)
    raise(ErrorType::kType, fmt::format("range expected at most 3 arguments, got {}", p.size()));
  const int64_t start = p.size() > 1 ? range_arg(p[0]) : 0;
  const int64_t stop = range_arg(p.size() > 1 ? p[1] : p[0]);
  const int64_t step = p.size() > 2 ? range_arg(p[2]) : 1;
  if (step == 0) raise(ErrorType::kValue, "range() arg 3 must not be zero");
  const int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                                 : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (count > kMaxRange)
    raise(ErrorType::kOverflow,
          fmt::format("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange));
  ValueList items;
  for (int64_t i = 0; i < count; ++i) items.push_back(Value::integer(start + i * step));
  return Value::list(std::move(items));
}

// dict(mapping_or_pairs, **kwargs), as Python's dict() builds it.
Dict build_dict(const CallArgs& args, const char* function) {
  if (args.positional.size() > 1)
    raise(ErrorType::kType, fmt::format("{} expected at most 1 argument, got {}", function, args.positional.size()));
  Dict d;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      d = source.as_dict();
    } else {
      for (const Value& pair : iterate(source)) {
        const ValueList kv = iterate(pair);
        if (kv.size() != 2) raise(ErrorType::kValue, "dictionary update sequence element has wrong length");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keywords) d.set(Value::string(key), value);
  return d;
}

Value g_dict(Evaluator&, CallArgs& args) { return Value::dict(build_dict(args, "dict")); }

// transformers' TemplateNamespace refuses underscore-prefixed names.
Value g_namespace(Evaluator&, CallArgs& args) {
  Dict attrs = build_dict(args, "namespace");
  for (const auto& entry : attrs.entries())
    if (entry.first.is_string() && !entry.first.as_string().empty() && entry.first.as_string()[0] == '_')
      raise(ErrorType::kSecurity,
            fmt::format("Chat templates cannot store underscore-prefixed attributes on a namespace, but got '{}'. "
                        "Please rename the attribute.",
                        entry.first.as_string()));
  return Value::make_namespace(std::move(attrs));
}

Value g_cycler(Evaluator&, CallArgs& args) { return make_cycler(args.positional); }

Value g_joiner(Evaluator&, CallArgs& args) {
  BoundArgs a("joiner", args, {"sep"});
  return make_joiner(a.has(0) ? py_str(a[0]) : ", ");
}

Value g_raise_exception(Evaluator&, CallArgs& args) {
  BoundArgs a("raise_exception", args, {"message"}, 1);
  raise(ErrorType::kTemplate, py_str(a[0]));
}

Value g_strftime_now(Evaluator& ev, CallArgs& args) {
  BoundArgs a("strftime_now", args, {"format"}, 1);
  const std::string format = a.get_string(0, "");
  std::tm local{};
  const std::time_t now = ev.options().now;
  localtime_r(&now, &local);
  std::string out(256 + format.size() * 8, '\0');
  const size_t n = format.empty() ? 0 : std::strftime(out.data(), out.size(), format.c_str(), &local);
  out.resize(n);
  return Value::string(std::move(out));
}

}  // namespace

void add_globals(Scope& scope) {
  scope.vars["range"] = Value::callable("range", g_range, "<class 'range'>");
  scope.vars["dict"] = Value::callable("dict", g_dict, "<TemplateDict object>");
  scope.vars["namespace"] = Value::callable("namespace", g_namespace, "<class 'TemplateNamespace'>");
  scope.vars["cycler"] = Value::callable("cycler", g_cycler, "<class 'jinja2.utils.Cycler'>");
  scope.vars["joiner"] = Value::callable("joiner", g_joiner, "<class 'jinja2.utils.Joiner'>");
  scope.vars["raise_exception"] = Value::callable("raise_exception", g_raise_exception, "<function raise_exception>");
  scope.vars["strftime_now"] = Value::callable("strftime_now", g_strftime_now, "<function strftime_now>");
}

}  // namespace drift::jinja
