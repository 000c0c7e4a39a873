#pragma once
// Reading tokenizer.json fields with errors that name the field path ("model.merges[3]"), so a
// malformed file says exactly what is wrong. The loader prefixes the file path.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace drift::json_fields {

using nlohmann::json;

// spec[key], failing "<field>.<key> is missing" when absent or null.
const json& require(const json& spec, const std::string& key, const std::string& field);
std::string require_string(const json& spec, const std::string& key, const std::string& field);
// spec[key] as bool/string when present and not null, failing on a wrong JSON type.
std::optional<bool> optional_bool(const json& spec, const std::string& key, const std::string& field);
std::optional<std::string> optional_string(const json& spec, const std::string& key, const std::string& field);
// spec["type"], failing when spec is not an object or has no string "type".
std::string type_of(const json& spec, const std::string& field);
[[noreturn]] void unknown_type(const std::string& field, const std::string& type, const char* supported);

}  // namespace drift::json_fields
