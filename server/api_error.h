#pragma once
// ApiError: what a request did wrong (or why the server cannot take it), as the HTTP status and
// the OpenAI-style error object clients parse: {"error": {"message", "type", "param", "code"}}.
// As in OpenAI's API, `code` is a short string naming the error ("model_not_found",
// "invalid_api_key") or null; the HTTP status is the response's status line, not a field.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace drift::server {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string type = "")
      : std::runtime_error(message), status(status), param(std::move(param)), type(std::move(type)) {}
  // This error with OpenAI's `code` string set: throw ApiError(404, ...).with_code("model_not_found").
  ApiError with_code(std::string c) const {
    ApiError copy = *this;
    copy.code = std::move(c);
    return copy;
  }
  int status;
  std::string param;  // the request field at fault ("" when none is)
  std::string type;   // "" = derived from the status
  std::string code;   // OpenAI's error code; "" = null
};

// 400 naming `param`.
inline ApiError bad_request(std::string param, std::string message) {
  return ApiError(400, std::move(message), std::move(param));
}

nlohmann::json error_json(const ApiError& error);

}  // namespace drift::server
