#pragma once
// Code-point classes as UTF-8 byte patterns: a grammar runs on bytes (tokens are byte strings and
// may end inside a character), so a class such as [^"\\] becomes the byte sequences that encode
// exactly its code points. Each sequence is a list of byte ranges, one per byte.
#include <cstdint>
#include <vector>

namespace drift::grammar {

struct CodePointRange {
  uint32_t first = 0, last = 0;  // inclusive
};

struct ByteRange {
  uint8_t first = 0, last = 0;  // inclusive
};

// The largest code point, and the surrogates UTF-8 never encodes.
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorted, merged ranges; surrogates (D800-DFFF) and anything past U+10FFFF removed.
std::vector<CodePointRange> normalize(std::vector<CodePointRange> ranges);
// Everything in [0, U+10FFFF] but the surrogates that `ranges` does not hold.
std::vector<CodePointRange> complement(const std::vector<CodePointRange>& ranges);

// Byte-range sequences whose concatenations are exactly the UTF-8 encodings of the code points in
// `ranges` (normalized first). Sequences are disjoint.
std::vector<std::vector<ByteRange>> utf8_sequences(const std::vector<CodePointRange>& ranges);

}  // namespace drift::grammar
