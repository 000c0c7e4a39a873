#include "server/request_body.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "server/api_error.h"

namespace drift::server {
namespace {

std::string trimmed_lower(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

ApiError body_too_large(size_t max_bytes) {
  return ApiError(413, fmt::format("the request body is larger than the server's limit of {} bytes", max_bytes));
}

std::optional<ApiError> framing_error(const httplib::Request& req) {
  if (req.get_header_value_count("Content-Length") > 1)
    return ApiError(400, "the request has more than one Content-Length");
  if (!req.has_header("Transfer-Encoding")) return std::nullopt;
  if (req.has_header("Content-Length"))
    return ApiError(400, "the request has both Transfer-Encoding and Content-Length: send one");
  const std::string encoding = req.get_header_value("Transfer-Encoding");
  if (req.get_header_value_count("Transfer-Encoding") > 1 || trimmed_lower(encoding) != "chunked")
    return ApiError(
        501, fmt::format("Transfer-Encoding \"{}\" is not supported: send \"chunked\" or Content-Length", encoding));
  return std::nullopt;
}

bool is_json_content_type(const std::string& content_type) {
  const std::string_view type(content_type);
  return trimmed_lower(type.substr(0, type.find(';'))) == "application/json";
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

std::string read_json_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes) {
  // 415, the status HTTP defines for a body of the wrong media type (vLLM answered 415 too,
  // before routing it through its request validation as a 400). The body says what to send.
  if (!is_json_content_type(req.get_header_value("Content-Type")))
    throw ApiError(415, fmt::format("Content-Type \"{}\" is not supported: send the body as application/json",
                                    req.get_header_value("Content-Type")));
  const bool chunked = req.has_header("Transfer-Encoding");
  if (!chunked && !req.has_header("Content-Length")) return "";  // HTTP/1.1: no framing, no body
  if (!chunked) {
    const std::string length = req.get_header_value("Content-Length");
    uint64_t declared = 0;
    const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), declared);
    if (ec != std::errc() || end != length.data() + length.size())
      throw ApiError(400, fmt::format("Content-Length \"{}\" is not a byte count", length));
    if (declared > max_bytes) throw body_too_large(max_bytes);
  }
  std::string body;
  bool over_limit = false;
  const bool complete = reader([&](const char* data, size_t size) {
    if (size > max_bytes - body.size()) {
      over_limit = true;
      return false;  // stop reading here: the rest is never received
    }
    body.append(data, size);
    return true;
  });
  if (over_limit) throw body_too_large(max_bytes);
  if (!complete) throw ApiError(400, "the request body was cut short, badly chunked or too slow to arrive");
  return body;
}

}  // namespace drift::server
