#pragma once
// A generation request's body, read with its limits enforced while it arrives: the size limit
// holds whatever the framing (Content-Length or chunked), and reading stops as soon as it is
// passed, so an oversized body costs the server at most `max_bytes` of memory and no parsing.
// (httplib 0.11 checks its payload limit against Content-Length only; a chunked body was read
// whole, then parsed and tokenized.)
#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace drift::server {

// Whether the Content-Type names JSON: "application/json", any case, parameters such as
// "; charset=utf-8" allowed.
bool is_json_content_type(const std::string& content_type);

// Whether the request carries a body (a Content-Length other than 0, or a Transfer-Encoding).
bool has_body(const httplib::Request& req);

// What is wrong with how the request frames its body, if anything (RFC 9112 6.1-6.3): a
// Transfer-Encoding other than exactly "chunked" is 501 (httplib would read such a body until
// the connection closes); Transfer-Encoding with Content-Length, or two Content-Lengths, is 400
// (a proxy in front may frame it the other way: request smuggling).
std::optional<ApiError> framing_error(const httplib::Request& req);

// The 413 for a body over `max_bytes`.
ApiError body_too_large(size_t max_bytes);

// The body of `req` through `reader`. ApiError: 415 when it is not JSON, 413 once it passes
// `max_bytes` (at once when Content-Length says so), 400 when it is cut short or badly framed.
// After an error the rest of the body is unread: the connection must not be reused.
std::string read_json_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes);

}  // namespace drift::server
