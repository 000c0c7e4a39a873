#pragma once
// FieldReader: typed access to one JSON object of a request body. Absent and null fields read as
// "not given"; a value of the wrong type is a 400 naming the field as the client wrote it
// (with its path, e.g. "speculative.enabled" or "messages[2].content").
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace drift::server {

class FieldReader {
 public:
  // `path`: where the object sits in the body ("" for the body itself); DriftError-free: a
  // non-object is a 400 naming the path.
  FieldReader(const nlohmann::ordered_json& object, std::string path);

  const nlohmann::ordered_json* find(const char* key) const;  // null when absent or null
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  std::optional<bool> boolean(const char* key) const;
  std::optional<double> number(const char* key) const;  // finite
  std::optional<int64_t> integer(const char* key) const;
  // An integer in [0, 2^64-1] (seeds: nlohmann reads values above 2^63-1 as unsigned).
  std::optional<uint64_t> unsigned_integer(const char* key) const;
  std::optional<std::string> string(const char* key) const;

 private:
  const nlohmann::ordered_json& object_;
  std::string path_;
};

// Human form of a JSON value for messages ("true", "-1", "\"abc\"").
std::string describe_value(const nlohmann::ordered_json& value);

}  // namespace drift::server
