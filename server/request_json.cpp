#include "server/request_json.h"

#include <fmt/format.h>

#include "server/api_error.h"

namespace drift::server {
namespace {

// Nesting depth of a JSON text (brackets outside strings), stopping once it passes `limit`.
bool nested_deeper_than(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

nlohmann::ordered_json parse_request_json(const std::string& text) {
  if (nested_deeper_than(text, kMaxJsonDepth))
    throw bad_request("", fmt::format("the request body is nested deeper than {} levels", kMaxJsonDepth));
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e400
    throw bad_request("", fmt::format("the request body is not valid JSON: {}", e.what()));
  }
}

}  // namespace drift::server
