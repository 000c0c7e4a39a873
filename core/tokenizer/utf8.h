#pragma once
// UTF-8 helpers shared by the tokenizers and the streaming decoder. Text inside the engine is
// UTF-8; these functions never assume it is valid unless their name says so.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace drift::utf8 {

// Length of the UTF-8 sequence that starts with `lead` (1..4), or 0 for a byte that cannot
// start one (a continuation byte or an invalid lead).
size_t sequence_length(unsigned char lead);

// Offset of the first invalid byte, or text.size() when `text` is valid UTF-8 (no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t first_invalid(std::string_view text);

// Throws DriftError naming `what` and the byte offset when `text` is not valid UTF-8.
void require_valid(std::string_view text, std::string_view what);

// Decodes the code point at text[pos] (valid UTF-8 assumed) and advances pos.
char32_t next_code_point(std::string_view text, size_t& pos);

void append_code_point(std::string& out, char32_t cp);

// `bytes` with every ill-formed subsequence replaced by U+FFFD, exactly as Rust's
// String::from_utf8_lossy does (HF's ByteLevel decoder relies on it).
std::string to_valid_lossy(std::string_view bytes);

// Length of the longest prefix of `text` that ends on a complete character and is not followed
// only by U+FFFD: trailing replacement characters and a truncated final sequence are excluded,
// because decoding more tokens may still turn them into real characters.
size_t stable_prefix_length(std::string_view text);

}  // namespace drift::utf8
