#pragma once
// JSON from files a user hands the engine (config.json, generation_config.json, tokenizer files,
// safetensors headers and indexes). nlohmann's defaults are unsafe for such input: a repeated key
// silently keeps its last value (so two readers can see two different files), and nesting is
// unbounded while the engine's own code (error messages, tokenizer components) walks values
// recursively. Both are refused here, with errors naming `what` (usually the file).
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace drift {

// Far deeper than any real config or tokenizer (they nest a handful of levels).
inline constexpr int kMaxJsonDepth = 128;

nlohmann::json parse_json_input(std::string_view text, const std::string& what);
// The same, keeping the keys in the order the text gives them.
nlohmann::ordered_json parse_ordered_json_input(std::string_view text, const std::string& what);
// Reads and parses a whole file; `what` in messages is its path.
nlohmann::json read_json_file(const std::string& path);

}  // namespace drift
