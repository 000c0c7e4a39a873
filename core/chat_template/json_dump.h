#pragma once
// Python's json.dumps for Values, which transformers' tojson filter calls:
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys).
// Floats print as Python's repr (1.0, 1e-05), keys keep insertion order unless sorted, and
// values JSON cannot hold (undefined, callables, namespaces) raise TypeError like Python.
#include <optional>
#include <string>

#include "core/chat_template/value.h"

namespace drift::jinja {

struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // absent: one line
  std::optional<std::string> item_separator;  // absent: ", " on one line, "," when indented
  std::string key_separator = ": ";
  bool sort_keys = false;
};

std::string json_dumps(const Value& value, const JsonOptions& options);

}  // namespace drift::jinja
