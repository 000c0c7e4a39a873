#pragma once
// Where a JSON object or array written inside other text ends: a tool call's arguments are
// followed by the format's closing markers, so the parser must find the end before it parses.
#include <cstddef>
#include <optional>
#include <string_view>

namespace drift::tools {

// The index just past the object or array that starts at text[begin] ('{' or '['), found by
// bracket depth outside strings (escapes honoured); nullopt when it does not close in `text`, or
// nests deeper than kMaxJsonDepth (nlohmann copies and prints values recursively: a model's or a
// client's arguments must not take the stack).
std::optional<size_t> json_value_end(std::string_view text, size_t begin);

}  // namespace drift::tools
