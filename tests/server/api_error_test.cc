// The OpenAI error object: `code` is OpenAI's string code or null (never the HTTP status),
// `param` the field or null, `type` derived from the status unless given.
#include <gtest/gtest.h>

#include "server/api_error.h"

namespace drift::server {
namespace {

TEST(ApiError, CodeIsNullUnlessNamedAndNeverTheStatus) {
  const nlohmann::json plain = error_json(bad_request("top_p", "top_p = 1.5: must be in (0, 1]"));
  EXPECT_EQ(plain["error"]["code"], nullptr);
  EXPECT_EQ(plain["error"]["param"], "top_p");
  EXPECT_EQ(plain["error"]["type"], "invalid_request_error");
  EXPECT_EQ(plain["error"]["message"], "top_p = 1.5: must be in (0, 1]");

  const nlohmann::json named = error_json(ApiError(404, "no such model", "model").with_code("model_not_found"));
  EXPECT_EQ(named["error"]["code"], "model_not_found");
  EXPECT_EQ(named["error"]["type"], "not_found_error");
  EXPECT_EQ(named["error"]["param"], "model");
}

TEST(ApiError, TypesFollowTheStatus) {
  EXPECT_EQ(error_json(ApiError(401, "key"))["error"]["type"], "authentication_error");
  EXPECT_EQ(error_json(ApiError(405, "method"))["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error_json(ApiError(413, "large"))["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error_json(ApiError(415, "type"))["error"]["type"], "invalid_request_error");
  EXPECT_EQ(error_json(ApiError(429, "busy"))["error"]["type"], "rate_limit_error");
  EXPECT_EQ(error_json(ApiError(500, "bug"))["error"]["type"], "server_error");
  EXPECT_EQ(error_json(ApiError(503, "stopping"))["error"]["param"], nullptr);
}

}  // namespace
}  // namespace drift::server
