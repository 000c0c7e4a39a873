#include "server/field_reader.h"

#include <cmath>

#include <fmt/format.h>

namespace drift::server {

std::string describe_value(const nlohmann::ordered_json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  return text;
}

FieldReader::FieldReader(const nlohmann::ordered_json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (!object_.is_object())
    throw bad_request(path_, fmt::format("{} must be a JSON object, got {}", path_.empty() ? "the request body" : path_,
                                         describe_value(object_)));
}

const nlohmann::ordered_json* FieldReader::find(const char* key) const {
  auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

namespace {

ApiError wrong_type(const std::string& name, const char* expected, const nlohmann::ordered_json& value) {
  return bad_request(name, fmt::format("{} must be {}, got {}", name, expected, describe_value(value)));
}

}  // namespace

std::optional<bool> FieldReader::boolean(const char* key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw wrong_type(name(key), "a boolean", *v);
  return v->get<bool>();
}

std::optional<double> FieldReader::number(const char* key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw wrong_type(name(key), "a number", *v);
  const double value = v->get<double>();
  if (!std::isfinite(value)) throw wrong_type(name(key), "a finite number", *v);
  return value;
}

std::optional<int64_t> FieldReader::integer(const char* key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw bad_request(name(key), fmt::format("{} = {} is out of range", name(key), describe_value(*v)));
  if (!v->is_number_integer()) throw wrong_type(name(key), "an integer", *v);
  return v->get<int64_t>();
}

std::optional<uint64_t> FieldReader::unsigned_integer(const char* key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) throw wrong_type(name(key), "an integer", *v);
  if (v->is_number_unsigned()) return v->get<uint64_t>();
  const auto value = v->get<int64_t>();
  if (value < 0) throw bad_request(name(key), fmt::format("{} = {}: must be in [0, 2^64-1]", name(key), value));
  return static_cast<uint64_t>(value);
}

std::optional<std::string> FieldReader::string(const char* key) const {
  const auto* v = find(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw wrong_type(name(key), "a string", *v);
  return v->get<std::string>();
}

}  // namespace drift::server
