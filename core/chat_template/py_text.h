#pragma once
// Python str semantics over UTF-8 text. Templates index, slice, strip, split and case-map strings
// the way Python does, which counts code points (not bytes) and treats Unicode whitespace as
// whitespace; these helpers do that on the UTF-8 std::string the engine stores.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drift::jinja {

// Invalid UTF-8 bytes decode to U+FFFD (templates and JSON inputs are valid UTF-8).
std::u32string to_code_points(std::string_view text);
std::string from_code_points(std::u32string_view points);
void append_code_point(std::string& out, char32_t point);
// Decodes the code point at byte `pos` and advances `pos` past it.
char32_t decode_code_point(std::string_view text, size_t& pos);
size_t code_point_count(std::string_view text);
// Byte offset of code point `index` (clamped to the text).
size_t byte_offset_of(std::string_view text, size_t index);

// Character classes as str.isspace() / str.isprintable() / str.isdigit() ... define them.
bool py_isspace(char32_t c);
bool py_isprintable(char32_t c);
bool py_isdigit(char32_t c);
bool py_isalpha(char32_t c);
bool py_isalnum(char32_t c);
bool py_islower_char(char32_t c);
bool py_isupper_char(char32_t c);
bool py_iscased(char32_t c);
char32_t py_to_upper(char32_t c);
char32_t py_to_lower(char32_t c);
char32_t py_to_title(char32_t c);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);  // str.title(): words are runs of cased characters
std::string py_capitalize(std::string_view s);
std::string py_swapcase(std::string_view s);
bool py_islower(std::string_view s);  // at least one cased character, none upper
bool py_isupper(std::string_view s);

// str.strip / lstrip / rstrip; `chars` absent: Unicode whitespace.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / rsplit; `sep` absent: runs of whitespace, ends dropped. maxsplit < 0: no limit.
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
// str.replace; count < 0: all.
std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
// str.find / rfind / count over the code-point range [start, end) (Python slice bounds).
int64_t py_find(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end,
                bool reverse);
int64_t py_count(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end);

// repr() of a str: single quotes unless only double quotes avoid escaping, non-printable
// characters escaped (\n, \x1b, \u200b, ...).
std::string py_string_repr(std::string_view s);

}  // namespace drift::jinja
