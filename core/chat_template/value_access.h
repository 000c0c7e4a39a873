#pragma once
// Attribute and item access as jinja2's sandbox does it: `x.name` tries the Python attribute
// (a method of str / dict / list) and then the item, `x[key]` the item and then the attribute;
// a miss yields an undefined value that names what was missing ("'dict object' has no attribute
// 'x'"), while reading from an undefined value raises. Mutating methods (list.append,
// dict.update, ...) resolve to an undefined value that raises SecurityError when called.
#include <string>

#include "core/chat_template/value.h"

namespace drift::jinja {

Value get_attribute(Evaluator& ev, const Value& object, const std::string& name);
Value get_item(Evaluator& ev, const Value& object, const Value& key);
// object[start:stop:step] on a str, list or tuple (absent bounds are none / undefined).
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);

}  // namespace drift::jinja
