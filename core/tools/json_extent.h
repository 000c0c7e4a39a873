#pragma once
// Where a JSON object or array written inside other text ends: a tool call's arguments are
// followed by the format's closing markers, so the parser must find the end before it parses.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace drift::tools {

// The first index at or after `pos` that is not JSON whitespace (text.size() when none is).
size_t skip_json_space(std::string_view text, size_t pos);

// The index just past the object or array that starts at text[begin] ('{' or '['), found by
// bracket depth outside strings (escapes honoured); nullopt when it does not close in `text`, or
// nests deeper than kMaxJsonDepth (nlohmann copies and prints values recursively: a model's or a
// client's arguments must not take the stack).
std::optional<size_t> json_value_end(std::string_view text, size_t begin);

// The text of member `key`'s value in `object`, a whole JSON object (the last one when the key
// repeats, as a parser keeps it), or nullopt when there is none -- and whenever any key is
// written with escapes (it may spell `key` too; only a parser can say). A tool call's arguments are passed on as the
// model wrote them, not re-serialized (numbers past 64 bits would become doubles).
std::optional<std::string_view> member_text(std::string_view object, std::string_view key);
// The texts of the elements of `array`, a whole JSON array, or nullopt.
std::optional<std::vector<std::string_view>> element_texts(std::string_view array);

}  // namespace drift::tools
