// Building blocks of the tokenizers: UTF-8 helpers, split behaviours, the regex dialect,
// White_Space, byte-level alphabet.
#include <gtest/gtest.h>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/normalizer.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/regex_dialect.h"
#include "core/tokenizer/split_pattern.h"
#include "core/tokenizer/utf8.h"
#include "core/tokenizer/white_space.h"

namespace drift {
namespace {

TEST(Utf8, LossyMatchesRustFromUtf8Lossy) {
  EXPECT_EQ(utf8::to_valid_lossy("ok"), "ok");
  // A truncated 3-byte sequence is one U+FFFD; a stray continuation byte is one each.
  EXPECT_EQ(utf8::to_valid_lossy("a\xE4\xB8" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(utf8::to_valid_lossy("\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(utf8::to_valid_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(utf8::to_valid_lossy("\xF0\x9F\x91"), "\xEF\xBF\xBD");
}

TEST(Utf8, StablePrefixHoldsBackTruncationAndReplacementCharacters) {
  EXPECT_EQ(utf8::stable_prefix_length("abc"), 3u);
  EXPECT_EQ(utf8::stable_prefix_length("ab\xE4\xB8"), 2u);
  EXPECT_EQ(utf8::stable_prefix_length("ab\xEF\xBF\xBD\xEF\xBF\xBD"), 2u);
  EXPECT_EQ(utf8::stable_prefix_length("\xE4\xB8\xAD"), 3u);
  EXPECT_EQ(utf8::stable_prefix_length(""), 0u);
}

TEST(Utf8, FirstInvalidRejectsOverlongAndOutOfRange) {
  EXPECT_EQ(utf8::first_invalid("h\xC3\xA9llo"), 6u);
  EXPECT_EQ(utf8::first_invalid("x\xC0\xAF"), 1u);      // overlong '/'
  EXPECT_EQ(utf8::first_invalid("x\xF4\x90\x80\x80"), 1u);  // > U+10FFFF
}

std::vector<std::string> pieces(std::string_view text, const char* pattern, SplitBehavior b, bool invert = false) {
  Regex re(pattern, false, "test");
  std::vector<std::string> out;
  for (auto [begin, end] : split_by_pattern(text, re, b, invert)) out.emplace_back(text.substr(begin, end - begin));
  return out;
}

TEST(SplitPattern, BehavioursMatchHf) {
  using V = std::vector<std::string>;
  // HF's own examples for splitting "The-final--countdown" on "-".
  EXPECT_EQ(pieces("The-final--countdown", "-", SplitBehavior::kRemoved), (V{"The", "final", "countdown"}));
  EXPECT_EQ(pieces("The-final--countdown", "-", SplitBehavior::kIsolated), (V{"The", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(pieces("The-final--countdown", "-", SplitBehavior::kMergedWithPrevious), (V{"The-", "final-", "-", "countdown"}));
  EXPECT_EQ(pieces("The-final--countdown", "-", SplitBehavior::kMergedWithNext), (V{"The", "-final", "-", "-countdown"}));
  EXPECT_EQ(pieces("The-final--countdown", "-", SplitBehavior::kContiguous), (V{"The", "-", "final", "--", "countdown"}));
  EXPECT_EQ(pieces("a b", "\\w+", SplitBehavior::kRemoved, /*invert=*/true), (V{"a", "b"}));
  EXPECT_EQ(pieces("日本 語", "\\p{L}+", SplitBehavior::kIsolated), (V{"日本", " ", "語"}));
}

TEST(RegexDialect, WhiteSpaceEscapesBecomeTheUnicodeProperty) {
  EXPECT_EQ(with_white_space_property(R"(\s+(?!\S))"), R"(\p{White_Space}+(?!\P{White_Space}))");
  EXPECT_EQ(with_white_space_property(R"( ?[^\s\p{L}\p{N}]+)"), R"( ?[^\p{White_Space}\p{L}\p{N}]+)");
  // An escaped backslash before "s", quoted text and other escapes stay as written.
  EXPECT_EQ(with_white_space_property(R"(\\s\\\s)"), R"(\\s\\\p{White_Space})");
  EXPECT_EQ(with_white_space_property(R"(\Q\s\E\s)"), R"(\Q\s\E\p{White_Space})");
  EXPECT_EQ(with_white_space_property(R"(\d\w\x{20}\)"), R"(\d\w\x{20}\)");
}

// Unicode White_Space, as Oniguruma and Rust regex (HF tokenizers) match \s.
TEST(RegexDialect, BackslashSMatchesWhiteSpaceOnly) {
  Regex space(R"(\s)", false, "test");
  for (const char* white : {" ", "\t", "\xC2\x85", "\xC2\xA0", "\xE2\x80\xA8", "\xE3\x80\x80"})
    EXPECT_EQ(space.find_all(white).size(), 1u) << white;
  // U+180E MONGOLIAN VOWEL SEPARATOR, U+200B ZERO WIDTH SPACE, U+FEFF BOM: not White_Space.
  for (const char* other : {"\xE1\xA0\x8E", "\xE2\x80\x8B", "\xEF\xBB\xBF", "x"})
    EXPECT_TRUE(space.find_all(other).empty()) << other;
}

// The reference: White_Space in Unicode's PropList.txt (the same since Unicode 6.3, when U+180E
// left it), which Rust's char::is_whitespace implements.
bool in_prop_list_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

TEST(WhiteSpace, IsUnicodeWhiteSpaceForEveryCodePoint) {
  int mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // surrogates are not characters
    if (is_white_space(cp) != in_prop_list_white_space(cp) && ++mismatches <= 10)
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp);
  }
  EXPECT_EQ(mismatches, 0);
}

// Expected texts from HF tokenizers 0.23.3: normalizers.Strip().normalize_str(...).
TEST(WhiteSpace, StripNormalizerTrimsUnicodeWhiteSpaceOnly) {
  auto strip = make_normalizer(nlohmann::json::parse(R"({"type": "Strip"})"), "normalizer");
  std::string text = "\xE3\x80\x80\xC2\x85 x\xE1\xA0\x8E \xE2\x80\xA8";  // U+3000 U+0085 ' x' U+180E ' ' U+2028
  strip->normalize(text);
  EXPECT_EQ(text, "x\xE1\xA0\x8E");
  text = "\xE1\xA0\x8Ex\xE2\x80\x8B";  // U+180E x U+200B: neither is White_Space
  strip->normalize(text);
  EXPECT_EQ(text, "\xE1\xA0\x8Ex\xE2\x80\x8B");
}

TEST(ByteLevel, AlphabetIsABijection) {
  for (int b = 0; b < 256; ++b) {
    std::string chars = byte_level::byte_to_chars(static_cast<uint8_t>(b));
    size_t pos = 0;
    char32_t cp = utf8::next_code_point(chars, pos);
    EXPECT_EQ(pos, chars.size());
    EXPECT_EQ(byte_level::char_to_byte(cp), b);
  }
  EXPECT_EQ(byte_level::encode(" \n"), "\xC4\xA0\xC4\x8A");  // "ĠĊ"
  EXPECT_EQ(byte_level::char_to_byte(U'€'), std::nullopt);
}

}  // namespace
}  // namespace drift
