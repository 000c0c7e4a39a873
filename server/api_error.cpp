#include "server/api_error.h"

namespace drift::server {
namespace {

// OpenAI's error types by status.
const char* type_for(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 404:
      return "not_found_error";
    case 429:
      return "rate_limit_error";
    case 503:
      return "service_unavailable";
    default:
      return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

nlohmann::json error_json(const ApiError& error) {
  nlohmann::json body = {{"message", error.what()},
                         {"type", error.type.empty() ? type_for(error.status) : error.type},
                         {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)},
                         {"code", error.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code)}};
  return {{"error", body}};
}

}  // namespace drift::server
