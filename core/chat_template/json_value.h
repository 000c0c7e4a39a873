#pragma once
// Conversion of the caller's JSON (messages, tools, extra variables) into template Values, as
// Python's json module would hand them to jinja2: integers stay int, other numbers float, objects
// keep their key order.
#include <nlohmann/json.hpp>

#include "core/chat_template/value.h"

namespace drift::jinja {

Value value_from_json(const nlohmann::ordered_json& json);

}  // namespace drift::jinja
