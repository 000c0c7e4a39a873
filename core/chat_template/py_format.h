#pragma once
// Python string formatting: `format % args` (printf style, used by the % operator and the
// `format` filter) and str.format() (the sandbox allows it on plain strings).
#include "core/chat_template/value.h"

namespace drift::jinja {

// `format % args`: a tuple supplies positional values, a dict named ones (%(name)s), anything
// else is the single value. Markup formats escape the values, as markupsafe does.
Value percent_format(const Value& format, const Value& args);

// str.format(*args, **kwargs) with auto or explicit field numbers, names, [key] / .attr lookups,
// !r / !s conversions and the format-spec mini-language.
std::string str_format(Evaluator& ev, const std::string& format, const CallArgs& args);

}  // namespace drift::jinja
