#include "core/tokenizer/byte_level.h"

#include <array>

#include "core/tokenizer/utf8.h"

namespace drift::byte_level {
namespace {

// bytes_to_unicode() of GPT-2: printable Latin-1 bytes map to themselves, the other 68 bytes
// to U+0100.. in byte order.
struct Tables {
  std::array<std::string, 256> to_chars;
  std::array<int16_t, 0x200> to_byte;  // every alphabet code point is < U+0144

  Tables() {
    to_byte.fill(-1);
    int next_extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next_extra++);
      utf8::append_code_point(to_chars[b], cp);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables instance;
  return instance;
}

}  // namespace

const std::string& byte_to_chars(uint8_t byte) { return tables().to_chars[byte]; }

std::optional<uint8_t> char_to_byte(char32_t cp) {
  if (cp >= tables().to_byte.size() || tables().to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(tables().to_byte[cp]);
}

std::string encode(std::string_view bytes) {
  const Tables& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.to_chars[static_cast<uint8_t>(c)];
  return out;
}

}  // namespace drift::byte_level
