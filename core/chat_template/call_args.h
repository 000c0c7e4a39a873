#pragma once
// BoundArgs: a call's arguments bound to a Python signature the way Python binds them
// (positional first, then keywords by name), so filters, methods and globals read parameters by
// position whichever way the template passed them. Too many, unknown or missing required
// arguments raise TypeError naming the function, as Python does.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat_template/value.h"

namespace drift::jinja {

class BoundArgs {
 public:
  BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params,
            size_t required = 0);

  bool has(size_t i) const { return present_[i]; }
  // The argument, or an undefined value when it was not given.
  const Value& operator[](size_t i) const { return values_[i]; }
  Value get_or(size_t i, Value fallback) const { return present_[i] ? values_[i] : fallback; }
  // Typed reads with Python's conversions; TypeError naming the parameter when the type is wrong.
  int64_t get_int(size_t i, int64_t fallback) const;
  bool get_bool(size_t i, bool fallback) const;
  std::string get_string(size_t i, const std::string& fallback) const;

 private:
  std::string function_;
  std::vector<std::string_view> names_;
  std::vector<Value> values_;
  std::vector<bool> present_;
};

// Raises TypeError when a function that takes no arguments got some.
void expect_no_args(std::string_view function, const CallArgs& args);

}  // namespace drift::jinja
