#pragma once
// Regex: a PCRE2 pattern compiled for UTF-8 with Unicode properties (\p{L}, \s, case folding),
// JIT-compiled because pre-tokenizer splitting is the hot loop of tokenizer.json encoding.
// tokenizer.json patterns are written for Oniguruma/Rust regex; the constructs real files use
// (classes, \p{..}, (?i:..), lookahead) mean the same in PCRE2 once `\s` is rewritten to
// Unicode White_Space (regex_dialect.h).
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace drift {

class Regex {
 public:
  // `literal`: match `pattern` as plain text. `field` names the JSON field in errors.
  Regex(std::string_view pattern, bool literal, const std::string& field);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-empty, non-overlapping matches of valid UTF-8 `text`, left to right, as [begin, end).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // Whether the pattern matches all of valid UTF-8 `text` (anchored at both ends).
  bool matches_whole(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The pattern of a Split pre-tokenizer or a Replace normalizer/decoder:
// {"String": "literal"} or {"Regex": "..."}. `field` names it in errors.
std::unique_ptr<Regex> make_pattern(const nlohmann::json& pattern, const std::string& field);

}  // namespace drift
