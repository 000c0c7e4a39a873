#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/tokenizer/regex.h"

#include <pcre2.h>

#include <algorithm>

#include "core/error.h"
#include "core/tokenizer/regex_dialect.h"
#include "core/tokenizer/utf8.h"

namespace drift {

struct Regex::Impl {
  pcre2_code* code = nullptr;
  std::string field;
  ~Impl() { pcre2_code_free(code); }
};

namespace {
std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

struct MatchData {
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  pcre2_match_data* data;
};
}  // namespace

Regex::Regex(std::string_view pattern, bool literal, const std::string& field) : impl_(std::make_unique<Impl>()) {
  impl_->field = field;
  // PCRE2_LITERAL admits only a few options; UCP only matters for patterns anyway.
  uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  const std::string compiled = literal ? std::string(pattern) : with_white_space_property(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(compiled.data()), compiled.size(), options,
                              &error, &offset, nullptr);
  // The offset refers to the rewritten pattern, which is the one shown when it differs.
  if (!impl_->code)
    fail("{}: cannot compile regex '{}'{} at offset {}: {}", field, pattern,
         compiled == pattern ? "" : fmt::format(" (as '{}')", compiled), offset, pcre2_message(error));
  // JIT is an optimisation only: without it (unsupported CPU) pcre2_match interprets.
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  MatchData match(impl_->code);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    // Callers validate UTF-8 once per input; re-checking per call would make splitting O(n^2).
    int rc = pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("{}: regex match failed at offset {}: {}", impl_->field, pos, pcre2_message(rc));
    PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.data);
    size_t begin = ovector[0], end = ovector[1];
    if (end == begin) {  // empty match: splits drop empty pieces, so just move one character on
      if (begin >= text.size()) break;
      pos = begin + std::max<size_t>(1, utf8::sequence_length(static_cast<unsigned char>(text[begin])));
      continue;
    }
    matches.emplace_back(begin, end);
    pos = end;
  }
  return matches;
}

bool Regex::matches_whole(std::string_view text) const {
  MatchData match(impl_->code);
  int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), 0,
                       PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_NO_UTF_CHECK, match.data, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) fail("{}: regex match failed: {}", impl_->field, pcre2_message(rc));
  return true;
}

// Shared by Replace normalizer/decoder and Split: {"String": "..."} or {"Regex": "..."}.
std::unique_ptr<Regex> make_pattern(const nlohmann::json& pattern, const std::string& field) {
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
    return std::make_unique<Regex>(pattern["String"].get<std::string>(), true, field);
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
    return std::make_unique<Regex>(pattern["Regex"].get<std::string>(), false, field);
  fail("{} must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", field, pattern.dump());
}

}  // namespace drift
