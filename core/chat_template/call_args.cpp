#include "core/chat_template/call_args.h"

#include <fmt/format.h>

#include "core/chat_template/value_ops.h"

namespace drift::jinja {

BoundArgs::BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> params,
                     size_t required)
    : function_(function), names_(params), values_(params.size()), present_(params.size(), false) {
  if (args.positional.size() > names_.size())
    raise(ErrorType::kType, fmt::format("{}() takes at most {} argument(s) ({} given)", function_, names_.size(),
                                        args.positional.size()));
  for (size_t i = 0; i < args.positional.size(); ++i) {
    values_[i] = args.positional[i];
    present_[i] = true;
  }
  for (const auto& [name, value] : args.keywords) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != name) ++i;
    if (i == names_.size())
      raise(ErrorType::kType, fmt::format("{}() got an unexpected keyword argument '{}'", function_, name));
    if (present_[i])
      raise(ErrorType::kType, fmt::format("{}() got multiple values for argument '{}'", function_, name));
    values_[i] = value;
    present_[i] = true;
  }
  for (size_t i = 0; i < required; ++i)
    if (!present_[i]) raise(ErrorType::kType, fmt::format("{}() missing required argument '{}'", function_, names_[i]));
}

int64_t BoundArgs::get_int(size_t i, int64_t fallback) const {
  if (!present_[i] || values_[i].is_none()) return fallback;
  if (values_[i].is_integral()) return values_[i].as_int();
  raise(ErrorType::kType,
        fmt::format("{}(): '{}' must be an integer, not {}", function_, names_[i], type_name(values_[i])));
}

bool BoundArgs::get_bool(size_t i, bool fallback) const { return present_[i] ? truthy(values_[i]) : fallback; }

std::string BoundArgs::get_string(size_t i, const std::string& fallback) const {
  if (!present_[i]) return fallback;
  if (values_[i].is_string()) return values_[i].as_string();
  raise(ErrorType::kType, fmt::format("{}(): '{}' must be str, not {}", function_, names_[i], type_name(values_[i])));
}

void expect_no_args(std::string_view function, const CallArgs& args) {
  if (!args.positional.empty() || !args.keywords.empty())
    raise(ErrorType::kType, fmt::format("{}() takes no arguments", function));
}

}  // namespace drift::jinja
