#pragma once
// The Python methods templates call on str, dict and list values (message.content.strip(),
// tool.get('function'), ...), bound to their object. The sandbox is immutable: a mutating
// method resolves to an undefined value that raises SecurityError when called, as jinja2's
// ImmutableSandboxedEnvironment does.
#include <optional>
#include <string>

#include "core/chat_template/value.h"

namespace drift::jinja {

// The bound method `object.name`, or nullopt when the type has no such attribute.
std::optional<Value> find_method(const Value& object, const std::string& name);

// Per-type method tables (methods_str.cpp, methods_container.cpp).
std::optional<Value> find_str_method(const Value& object, const std::string& name);
std::optional<Value> find_dict_method(const Value& object, const std::string& name);
std::optional<Value> find_list_method(const Value& object, const std::string& name);

}  // namespace drift::jinja
