#include "core/chat_template/py_text.h"

#include <algorithm>

#include <fmt/format.h>
#include <utf8proc.h>

namespace drift::jinja {
namespace {

// Length of the UTF-8 sequence a lead byte starts; 0 for a continuation or invalid byte.
int sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

// Decodes one code point at `pos`, advancing it; U+FFFD for a malformed sequence.
char32_t decode_one(std::string_view text, size_t& pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  const int len = sequence_length(lead);
  if (len == 0 || pos + len > text.size()) {
    ++pos;
    return 0xFFFD;
  }
  if (len == 1) {
    ++pos;
    return lead;
  }
  char32_t point = lead & (0x7F >> len);
  for (int i = 1; i < len; ++i) {
    const auto next = static_cast<unsigned char>(text[pos + i]);
    if ((next & 0xC0) != 0x80) {
      ++pos;
      return 0xFFFD;
    }
    point = (point << 6) | (next & 0x3F);
  }
  pos += len;
  return point;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

template <typename Map>
std::string map_points(std::string_view s, Map map) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) map(out, decode_one(s, pos));
  return out;
}

bool in_set(char32_t c, const std::u32string& set) { return set.find(c) != std::u32string::npos; }

// Python slice bounds [start, end) over `length` code points, clamped.
std::pair<size_t, size_t> slice_bounds(size_t length, std::optional<int64_t> start, std::optional<int64_t> end) {
  const auto n = static_cast<int64_t>(length);
  auto clamp = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
  const int64_t lo = start ? clamp(*start) : 0;
  const int64_t hi = end ? clamp(*end) : n;
  return {static_cast<size_t>(lo), static_cast<size_t>(hi)};
}

}  // namespace

char32_t decode_code_point(std::string_view text, size_t& pos) { return decode_one(text, pos); }

std::u32string to_code_points(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) out.push_back(decode_one(text, pos));
  return out;
}

void append_code_point(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string from_code_points(std::u32string_view points) {
  std::string out;
  out.reserve(points.size());
  for (char32_t c : points) append_code_point(out, c);
  return out;
}

size_t code_point_count(std::string_view text) {
  size_t count = 0;
  for (char c : text)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++count;
  return count;
}

size_t byte_offset_of(std::string_view text, size_t index) {
  size_t pos = 0;
  for (size_t i = 0; i < index && pos < text.size(); ++i) decode_one(text, pos);
  return pos;
}

bool py_isspace(char32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  if (c < 0x80) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_isprintable(char32_t c) {
  if (c == ' ') return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool py_isdigit(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_ND || c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x2070 && c <= 0x2079);
}

bool py_isalpha(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
}

bool py_isalnum(char32_t c) {
  const auto cat = category(c);
  return py_isalpha(c) || cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

bool py_islower_char(char32_t c) { return category(c) == UTF8PROC_CATEGORY_LL; }
bool py_isupper_char(char32_t c) { return category(c) == UTF8PROC_CATEGORY_LU; }
bool py_iscased(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

char32_t py_to_upper(char32_t c) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))); }
char32_t py_to_lower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t py_to_title(char32_t c) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))); }

std::string py_upper(std::string_view s) {
  return map_points(s, [](std::string& out, char32_t c) {
    if (c == 0xDF) {  // ß has no single upper-case letter; Python's full mapping gives "SS"
      out += "SS";
      return;
    }
    append_code_point(out, py_to_upper(c));
  });
}

std::string py_lower(std::string_view s) {
  return map_points(s, [](std::string& out, char32_t c) { append_code_point(out, py_to_lower(c)); });
}

std::string py_title(std::string_view s) {
  bool previous_cased = false;
  return map_points(s, [&](std::string& out, char32_t c) {
    append_code_point(out, previous_cased ? py_to_lower(c) : py_to_title(c));
    previous_cased = py_iscased(c);
  });
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_points(s, [&](std::string& out, char32_t c) {
    append_code_point(out, first ? py_to_title(c) : py_to_lower(c));
    first = false;
  });
}

std::string py_swapcase(std::string_view s) {
  return map_points(s, [](std::string& out, char32_t c) {
    append_code_point(out, py_isupper_char(c) ? py_to_lower(c) : py_islower_char(c) ? py_to_upper(c) : c);
  });
}

bool py_islower(std::string_view s) {
  bool cased = false;
  for (char32_t c : to_code_points(s)) {
    if (py_isupper_char(c) || category(c) == UTF8PROC_CATEGORY_LT) return false;
    cased = cased || py_islower_char(c);
  }
  return cased;
}

bool py_isupper(std::string_view s) {
  bool cased = false;
  for (char32_t c : to_code_points(s)) {
    if (py_islower_char(c) || category(c) == UTF8PROC_CATEGORY_LT) return false;
    cased = cased || py_isupper_char(c);
  }
  return cased;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string points = to_code_points(s);
  const std::u32string set = chars ? to_code_points(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? in_set(c, set) : py_isspace(c); };
  size_t begin = 0;
  size_t end = points.size();
  if (left)
    while (begin < end && strip_it(points[begin])) ++begin;
  if (right)
    while (end > begin && strip_it(points[end - 1])) --end;
  return from_code_points(std::u32string_view(points).substr(begin, end - begin));
}

namespace {

std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit) {
  const std::u32string p = to_code_points(s);
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = p.size();
  while (maxsplit-- != 0) {
    while (i < n && py_isspace(p[i])) ++i;
    if (i == n) break;
    const size_t j = i;
    while (i < n && !py_isspace(p[i])) ++i;
    out.push_back(from_code_points(std::u32string_view(p).substr(j, i - j)));
  }
  while (i < n && py_isspace(p[i])) ++i;
  if (i < n) out.push_back(from_code_points(std::u32string_view(p).substr(i)));
  return out;
}

std::vector<std::string> rsplit_whitespace(std::string_view s, int64_t maxsplit) {
  const std::u32string p = to_code_points(s);
  std::vector<std::string> out;
  size_t i = p.size();
  while (maxsplit-- != 0) {
    while (i > 0 && py_isspace(p[i - 1])) --i;
    if (i == 0) break;
    const size_t j = i;
    while (i > 0 && !py_isspace(p[i - 1])) --i;
    out.push_back(from_code_points(std::u32string_view(p).substr(i, j - i)));
  }
  while (i > 0 && py_isspace(p[i - 1])) --i;
  if (i > 0) out.push_back(from_code_points(std::u32string_view(p).substr(0, i)));
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (!sep) return split_whitespace(s, maxsplit);
  std::vector<std::string> out;
  size_t pos = 0;
  while (maxsplit-- != 0) {
    const size_t hit = s.find(*sep, pos);
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, hit - pos));
    pos = hit + sep->size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  if (!sep) return rsplit_whitespace(s, maxsplit);
  std::vector<std::string> out;
  size_t end = s.size();
  while (maxsplit-- != 0 && end >= sep->size()) {
    const size_t hit = s.rfind(*sep, end - sep->size());
    if (hit == std::string_view::npos) break;
    out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
    end = hit;
  }
  out.emplace_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  const std::u32string p = to_code_points(s);
  std::vector<std::string> out;
  size_t start = 0;
  size_t i = 0;
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
           c == 0x2028 || c == 0x2029;
  };
  while (i < p.size()) {
    if (!is_break(p[i])) {
      ++i;
      continue;
    }
    const size_t line_end = i;
    i += (p[i] == '\r' && i + 1 < p.size() && p[i + 1] == '\n') ? 2 : 1;
    out.push_back(from_code_points(std::u32string_view(p).substr(start, (keepends ? i : line_end) - start)));
    start = i;
  }
  if (start < p.size()) out.push_back(from_code_points(std::u32string_view(p).substr(start)));
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts the replacement around every code point
    const std::u32string p = to_code_points(s);
    for (char32_t c : p) {
      if (count-- != 0) out += replacement;
      append_code_point(out, c);
    }
    if (count != 0) out += replacement;
    return out;
  }
  size_t pos = 0;
  while (count-- != 0) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(replacement);
    pos = hit + old.size();
  }
  out.append(s.substr(pos));
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end,
                bool reverse) {
  const auto [lo, hi] = slice_bounds(code_point_count(s), start, end);
  if (lo > hi) return -1;
  const size_t byte_lo = byte_offset_of(s, lo);
  const size_t byte_hi = byte_offset_of(s, hi);
  const std::string_view range = s.substr(byte_lo, byte_hi - byte_lo);
  const size_t hit = reverse ? range.rfind(sub) : range.find(sub);
  if (hit == std::string_view::npos) return -1;
  return static_cast<int64_t>(lo + code_point_count(range.substr(0, hit)));
}

int64_t py_count(std::string_view s, std::string_view sub, std::optional<int64_t> start, std::optional<int64_t> end) {
  const auto [lo, hi] = slice_bounds(code_point_count(s), start, end);
  if (lo > hi) return 0;
  if (sub.empty()) return static_cast<int64_t>(hi - lo + 1);
  const size_t byte_lo = byte_offset_of(s, lo);
  const std::string_view range = s.substr(byte_lo, byte_offset_of(s, hi) - byte_lo);
  int64_t count = 0;
  for (size_t pos = range.find(sub); pos != std::string_view::npos; pos = range.find(sub, pos + sub.size())) ++count;
  return count;
}

std::string py_string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < s.size()) {
    const char32_t c = decode_one(s, pos);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if (c < 0x80 || py_isprintable(c)) {
      append_code_point(out, c);
    } else if (c < 0x100) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if (c < 0x10000) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += fmt::format("\\U{:08x}", static_cast<unsigned>(c));
    }
  }
  out.push_back(quote);
  return out;
}

}  // namespace drift::jinja
