// StreamingDecoder over every tokenizer: streamed text equals the full decode whatever the
// chunking, and no increment ever holds a broken UTF-8 sequence.
#include "core/tokenizer/streaming_decoder.h"

#include <random>

#include <gtest/gtest.h>

#include "core/tokenizer/sentencepiece_tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tests/core/tokenizer/golden_cases.h"

namespace drift {
namespace {

using test::test_data_path;

struct Named {
  std::string golden;
  std::string dir_or_model;
};
void PrintTo(const Named& n, std::ostream* os) { *os << n.golden; }

std::unique_ptr<Tokenizer> open_tokenizer(const Named& n) {
  if (n.dir_or_model.ends_with(".model")) return std::make_unique<SentencePieceTokenizer>(test_data_path(n.dir_or_model));
  return load_tokenizer(test_data_path(n.dir_or_model));
}

// Streams `ids` in chunks of random size 1..max_chunk; returns the concatenated output.
std::string stream(const Tokenizer& tok, const std::vector<int32_t>& ids, std::mt19937& rng, size_t max_chunk) {
  StreamingDecoder decoder(tok);
  std::string out;
  size_t pos = 0;
  while (pos < ids.size()) {
    size_t n = std::min(ids.size() - pos, std::uniform_int_distribution<size_t>(1, max_chunk)(rng));
    std::string piece = decoder.push(std::vector<int32_t>(ids.begin() + pos, ids.begin() + pos + n));
    EXPECT_EQ(utf8::first_invalid(piece), piece.size()) << "broken UTF-8 in a streamed piece";
    out += piece;
    pos += n;
  }
  out += decoder.finish();
  return out;
}

class StreamingGolden : public ::testing::TestWithParam<Named> {};

TEST_P(StreamingGolden, StreamEqualsFullDecode) {
  auto tok = open_tokenizer(GetParam());
  std::mt19937 rng(1234);
  auto cases = test::load_golden_cases(GetParam().golden);
  ASSERT_FALSE(cases.empty());
  std::vector<int32_t> all;  // also stream everything as one long generation
  for (const auto& c : cases) {
    EXPECT_EQ(stream(*tok, c.ids, rng, 1), tok->decode(c.ids)) << c.text;
    EXPECT_EQ(stream(*tok, c.ids, rng, 5), tok->decode(c.ids)) << c.text;
    all.insert(all.end(), c.ids.begin(), c.ids.end());
  }
  EXPECT_EQ(stream(*tok, all, rng, 1), tok->decode(all));
}

INSTANTIATE_TEST_SUITE_P(All, StreamingGolden,
                         ::testing::Values(Named{"llama2", "tokenizers/llama2/tokenizer.model"},
                                           Named{"tok512", "models/stories260K/tokenizer.model"},
                                           Named{"llama3", "tokenizers/llama3"},
                                           Named{"qwen3", "tokenizers/qwen3"}),
                         [](const auto& info) { return info.param.golden; });

TEST(StreamingDecoder, HoldsBackIncompleteCharacter) {
  // Llama-3 encodes the emoji 👍 (F0 9F 91 8D) as several byte-level tokens.
  auto tok = load_tokenizer(test_data_path("tokenizers/llama3"));
  std::vector<int32_t> ids = tok->encode("ok 👍");
  ASSERT_GT(ids.size(), 2u);
  StreamingDecoder decoder(*tok);
  std::string out;
  bool held_back = false;
  std::vector<int32_t> so_far;
  for (int32_t id : ids) {
    so_far.push_back(id);
    out += decoder.push({id});
    // The full decode of a partial emoji ends in U+FFFD; the stream must hold that back.
    if (out != tok->decode(so_far)) held_back = true;
    EXPECT_EQ(utf8::first_invalid(out), out.size());
    EXPECT_EQ(out.find("\xEF\xBF\xBD"), std::string::npos) << "replacement character leaked";
  }
  EXPECT_TRUE(held_back);
  EXPECT_EQ(out + decoder.finish(), "ok 👍");
}

TEST(StreamingDecoder, FinishFlushesTruncatedCharacter) {
  auto tok = load_tokenizer(test_data_path("tokenizers/llama3"));
  std::vector<int32_t> ids = tok->encode("👍");
  ASSERT_GT(ids.size(), 1u);
  ids.pop_back();  // the generation stopped mid-character
  StreamingDecoder decoder(*tok);
  EXPECT_EQ(decoder.push(ids), "");
  EXPECT_EQ(decoder.finish(), tok->decode(ids));
  EXPECT_EQ(decoder.finish(), "");
}

TEST(StreamingDecoder, SentencePieceFirstWordHasNoLeadingSpaceButLaterOnesDo) {
  SentencePieceTokenizer tok(test_data_path("models/stories260K/tokenizer.model"));
  StreamingDecoder decoder(tok);
  std::string out;
  for (int32_t id : {1, 403, 407, 261, 378}) out += decoder.push({id});
  EXPECT_EQ(out + decoder.finish(), "Once upon a time");
}

}  // namespace
}  // namespace drift
