#include "core/grammar/utf8_ranges.h"

#include <algorithm>

namespace drift::grammar {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800, kSurrogateLast = 0xDFFF;
// The largest code point of each UTF-8 length.
constexpr uint32_t kLengthMax[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

int encoded_length(uint32_t cp) {
  int n = 0;
  while (cp > kLengthMax[n]) ++n;
  return n + 1;
}

std::vector<uint8_t> encode(uint32_t cp, int length) {
  if (length == 1) return {static_cast<uint8_t>(cp)};
  std::vector<uint8_t> out(length);
  for (int i = length - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  out[0] = static_cast<uint8_t>(kLead[length] | cp);
  return out;
}

// [first, last] of one encoded length, split until each piece is a product of byte ranges: the
// classic construction (as in RE2 and Rust's regex-syntax) -- a range is a product when every
// trailing byte spans its whole 0x80-0xBF span except where first and last share a prefix.
void split(uint32_t first, uint32_t last, std::vector<std::vector<ByteRange>>& out) {
  const int length = encoded_length(first);
  if (length == 1) {
    out.push_back({{static_cast<uint8_t>(first), static_cast<uint8_t>(last)}});
    return;
  }
  for (int i = 1; i < length; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((first & ~mask) != (last & ~mask)) {
      if ((first & mask) != 0) {
        split(first, first | mask, out);
        split((first | mask) + 1, last, out);
        return;
      }
      if ((last & mask) != mask) {
        split(first, (last & ~mask) - 1, out);
        split(last & ~mask, last, out);
        return;
      }
    }
  }
  const std::vector<uint8_t> a = encode(first, length), b = encode(last, length);
  std::vector<ByteRange> seq;
  for (int i = 0; i < length; ++i) seq.push_back({a[i], b[i]});
  out.push_back(std::move(seq));
}

}  // namespace

std::vector<CodePointRange> normalize(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> cut;
  for (CodePointRange r : ranges) {
    if (r.first > r.last || r.first > kMaxCodePoint) continue;
    r.last = std::min(r.last, kMaxCodePoint);
    if (r.last < kSurrogateFirst || r.first > kSurrogateLast) {
      cut.push_back(r);
      continue;
    }
    if (r.first < kSurrogateFirst) cut.push_back({r.first, kSurrogateFirst - 1});
    if (r.last > kSurrogateLast) cut.push_back({kSurrogateLast + 1, r.last});
  }
  std::sort(cut.begin(), cut.end(), [](auto a, auto b) { return a.first < b.first; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : cut) {
    if (!merged.empty() && r.first <= merged.back().last + 1)
      merged.back().last = std::max(merged.back().last, r.last);
    else
      merged.push_back(r);
  }
  return merged;
}

std::vector<CodePointRange> complement(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const CodePointRange& r : normalize(ranges)) {
    if (r.first > next) out.push_back({next, r.first - 1});
    next = r.last + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalize(std::move(out));
}

std::vector<std::vector<ByteRange>> utf8_sequences(const std::vector<CodePointRange>& ranges) {
  std::vector<std::vector<ByteRange>> out;
  for (CodePointRange r : normalize(ranges)) {
    for (uint32_t max : kLengthMax) {  // one encoded length at a time
      if (r.first > r.last) break;
      if (r.first > max) continue;
      const uint32_t last = std::min(r.last, max);
      split(r.first, last, out);
      r.first = last + 1;
      if (last == kMaxCodePoint) break;
    }
  }
  return out;
}

}  // namespace drift::grammar
