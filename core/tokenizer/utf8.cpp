#include "core/tokenizer/utf8.h"

#include "core/error.h"

namespace drift::utf8 {

size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

namespace {
// Bounds for the second byte that rule out overlong forms, surrogates and > U+10FFFF.
bool second_byte_ok(unsigned char lead, unsigned char second) {
  if ((second & 0xC0) != 0x80) return false;
  if (lead == 0xE0) return second >= 0xA0;
  if (lead == 0xED) return second <= 0x9F;
  if (lead == 0xF0) return second >= 0x90;
  if (lead == 0xF4) return second <= 0x8F;
  return true;
}

// Number of bytes of the valid sequence at text[pos], 0 if invalid or truncated.
size_t valid_sequence_at(std::string_view text, size_t pos) {
  auto lead = static_cast<unsigned char>(text[pos]);
  size_t len = sequence_length(lead);
  if (len <= 1) return len;
  if (pos + len > text.size()) return 0;
  if (!second_byte_ok(lead, static_cast<unsigned char>(text[pos + 1]))) return 0;
  for (size_t i = 2; i < len; ++i)
    if ((static_cast<unsigned char>(text[pos + i]) & 0xC0) != 0x80) return 0;
  return len;
}
}  // namespace

size_t first_invalid(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII fast path: most prompt text is ASCII.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t len = valid_sequence_at(text, pos);
    if (len == 0) return pos;
    pos += len;
  }
  return text.size();
}

void require_valid(std::string_view text, std::string_view what) {
  size_t bad = first_invalid(text);
  if (bad != text.size())
    fail("{} is not valid UTF-8 (invalid byte 0x{:02X} at offset {})", what,
         static_cast<unsigned char>(text[bad]), bad);
}

char32_t next_code_point(std::string_view text, size_t& pos) {
  auto lead = static_cast<unsigned char>(text[pos]);
  size_t len = sequence_length(lead);
  if (len <= 1) {
    ++pos;
    return lead;
  }
  char32_t cp = lead & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  pos += len;
  return cp;
}

void append_code_point(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string to_valid_lossy(std::string_view bytes) {
  if (first_invalid(bytes) == bytes.size()) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 8);
  size_t pos = 0;
  while (pos < bytes.size()) {
    if (size_t len = valid_sequence_at(bytes, pos); len > 0) {
      out.append(bytes, pos, len);
      pos += len;
      continue;
    }
    // One U+FFFD per maximal prefix of a well-formed sequence (at least one byte).
    auto lead = static_cast<unsigned char>(bytes[pos]);
    size_t want = sequence_length(lead), take = 1;
    if (want > 1 && pos + 1 < bytes.size() && second_byte_ok(lead, static_cast<unsigned char>(bytes[pos + 1]))) {
      take = 2;
      while (take < want && pos + take < bytes.size() &&
             (static_cast<unsigned char>(bytes[pos + take]) & 0xC0) == 0x80)
        ++take;
    }
    out += "\xEF\xBF\xBD";
    pos += take;
  }
  return out;
}

size_t stable_prefix_length(std::string_view text) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  size_t end = text.size();
  // A truncated final sequence: back up to its lead byte.
  size_t back = 0;
  while (back < 3 && back < end && (static_cast<unsigned char>(text[end - 1 - back]) & 0xC0) == 0x80)
    ++back;
  if (back < end) {
    size_t lead_pos = end - 1 - back;
    size_t len = sequence_length(static_cast<unsigned char>(text[lead_pos]));
    if (len > back + 1) end = lead_pos;
  }
  while (end >= kReplacement.size() && text.substr(end - kReplacement.size(), kReplacement.size()) == kReplacement)
    end -= kReplacement.size();
  return end;
}

}  // namespace drift::utf8
