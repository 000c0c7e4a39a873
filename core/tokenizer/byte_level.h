#pragma once
// GPT-2's byte-level alphabet: every byte maps to one printable code point, so byte-level BPE
// vocabularies never hold raw control bytes or spaces (a space is "Ġ", U+0120).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace drift::byte_level {

// UTF-8 of the code point standing for `byte`.
const std::string& byte_to_chars(uint8_t byte);
// The byte a code point stands for, if it is one of the 256 alphabet code points.
std::optional<uint8_t> char_to_byte(char32_t cp);
// Maps every byte of `bytes` to its alphabet character.
std::string encode(std::string_view bytes);

}  // namespace drift::byte_level
