#include "core/tokenizer/json_fields.h"

#include "core/error.h"

namespace drift::json_fields {

const json& require(const json& spec, const std::string& key, const std::string& field) {
  if (!spec.is_object()) fail("{} must be a JSON object, got {}", field, spec.type_name());
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) fail("{}.{} is missing", field, key);
  return *it;
}

std::string require_string(const json& spec, const std::string& key, const std::string& field) {
  const json& v = require(spec, key, field);
  if (!v.is_string()) fail("{}.{} must be a string, got {}", field, key, v.dump());
  return v.get<std::string>();
}

std::optional<bool> optional_bool(const json& spec, const std::string& key, const std::string& field) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) fail("{}.{} must be true or false, got {}", field, key, it->dump());
  return it->get<bool>();
}

std::optional<std::string> optional_string(const json& spec, const std::string& key, const std::string& field) {
  auto it = spec.find(key);
  if (it == spec.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) fail("{}.{} must be a string, got {}", field, key, it->dump());
  return it->get<std::string>();
}

std::string type_of(const json& spec, const std::string& field) {
  return require_string(spec, "type", field);
}

void unknown_type(const std::string& field, const std::string& type, const char* supported) {
  fail("{}.type '{}' is not supported (supported: {})", field, type, supported);
}

}  // namespace drift::json_fields
