#pragma once
// The request body's text turned into JSON. Every way the text can fail is a 400 (never a 500):
// malformed JSON, a number JSON cannot hold as a double (1e400: nlohmann throws out_of_range,
// not parse_error, for it), and nesting deeper than kMaxJsonDepth (nlohmann's dump and copy
// recurse, so a body nested thousands deep must never reach them).
#include <string>

#include <nlohmann/json.hpp>

namespace drift::server {

inline constexpr int kMaxJsonDepth = 64;

nlohmann::ordered_json parse_request_json(const std::string& text);

}  // namespace drift::server
