#include "core/tools/json_extent.h"

#include <algorithm>

#include "core/json_input.h"

namespace drift::tools {

constexpr std::string_view kSpace = " \t\r\n";  // JSON's whitespace

size_t skip_json_space(std::string_view text, size_t pos) {
  const size_t next = text.find_first_not_of(kSpace, pos);
  return next == std::string_view::npos ? text.size() : next;
}

std::optional<size_t> json_value_end(std::string_view text, size_t begin) {
  if (begin >= text.size() || (text[begin] != '{' && text[begin] != '[')) return std::nullopt;
  int depth = 0;
  bool in_string = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character is never a quote that ends the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return std::nullopt;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return std::nullopt;
}

namespace {

// Just past the string that starts at text[begin] ('"').
std::optional<size_t> string_end(std::string_view text, size_t begin) {
  for (size_t i = begin + 1; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i + 1;
  }
  return std::nullopt;
}

// Just past the value (of any kind) that starts at text[begin]; a number or literal ends where
// the enclosing object or array goes on.
std::optional<size_t> any_value_end(std::string_view text, size_t begin) {
  if (begin >= text.size()) return std::nullopt;
  if (text[begin] == '{' || text[begin] == '[') return json_value_end(text, begin);
  if (text[begin] == '"') return string_end(text, begin);
  const size_t end = std::min(text.find_first_of(",]}", begin), text.size());
  const size_t last = text.find_last_not_of(kSpace, end - 1);
  return last == std::string_view::npos || last < begin ? std::nullopt : std::optional(last + 1);
}

// Calls visit(key, value) for each member of the object (key empty for an array's elements);
// false when the text is not one plainly.
template <typename Visit>
bool for_each_member(std::string_view text, bool object, Visit visit) {
  size_t i = skip_json_space(text, 0);
  if (i >= text.size() || text[i] != (object ? '{' : '[')) return false;
  i = skip_json_space(text, i + 1);
  if (i < text.size() && text[i] == (object ? '}' : ']')) return skip_json_space(text, i + 1) == text.size();
  for (;;) {
    std::string_view key;
    if (object) {
      const auto key_end = i < text.size() && text[i] == '"' ? string_end(text, i) : std::nullopt;
      if (!key_end) return false;
      key = text.substr(i + 1, *key_end - i - 2);
      i = skip_json_space(text, *key_end);
      if (i >= text.size() || text[i] != ':') return false;
      i = skip_json_space(text, i + 1);
    }
    const auto end = any_value_end(text, i);
    if (!end) return false;
    visit(key, text.substr(i, *end - i));
    i = skip_json_space(text, *end);
    if (i < text.size() && text[i] == ',') {
      i = skip_json_space(text, i + 1);
      continue;
    }
    return i < text.size() && text[i] == (object ? '}' : ']') && skip_json_space(text, i + 1) == text.size();
  }
}

}  // namespace

std::optional<std::string_view> member_text(std::string_view object, std::string_view key) {
  std::optional<std::string_view> found;
  bool escaped = false;  // a key with escapes may spell `key` too: only a parser can say
  const bool whole = for_each_member(object, true, [&](std::string_view k, std::string_view value) {
    escaped = escaped || k.find('\\') != std::string_view::npos;
    if (k == key) found = value;
  });
  return whole && !escaped ? found : std::nullopt;
}

std::optional<std::vector<std::string_view>> element_texts(std::string_view array) {
  std::vector<std::string_view> elements;
  if (!for_each_member(array, false, [&](std::string_view, std::string_view value) { elements.push_back(value); }))
    return std::nullopt;
  return elements;
}

}  // namespace drift::tools
