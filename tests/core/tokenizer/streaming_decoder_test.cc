// StreamingDecoder over every tokenizer (the SentencePiece-style tokenizer.json included):
// streamed text equals the full decode whatever the chunking or the ids, and no increment ever
// holds a broken UTF-8 sequence.
#include "core/tokenizer/streaming_decoder.h"

#include <algorithm>
#include <map>
#include <random>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/tokenizer/byte_level.h"
#include "core/tokenizer/sentencepiece_tokenizer.h"
#include "core/tokenizer/utf8.h"
#include "tests/core/tokenizer/golden_cases.h"
#include "tests/core/tokenizer/sentencepiece_style_json.h"

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

struct Streamed {
  std::string text;            // all pieces and the final flush
  bool pieces_valid = true;    // every piece was valid UTF-8
};

// Streams `ids` in chunks of random size 1..max_chunk.
Streamed stream(const Tokenizer& tok, const std::vector<int32_t>& ids, std::mt19937& rng, size_t max_chunk) {
  StreamingDecoder decoder(tok);
  Streamed out;
  size_t pos = 0;
  while (pos < ids.size()) {
    size_t n = std::min(ids.size() - pos, std::uniform_int_distribution<size_t>(1, max_chunk)(rng));
    std::string piece = decoder.push(std::vector<int32_t>(ids.begin() + pos, ids.begin() + pos + n));
    out.pieces_valid = out.pieces_valid && utf8::first_invalid(piece) == piece.size();
    out.text += piece;
    pos += n;
  }
  std::string rest = decoder.finish();
  out.pieces_valid = out.pieces_valid && utf8::first_invalid(rest) == rest.size();
  out.text += rest;
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
    for (size_t max_chunk : {1, 5}) {
      Streamed streamed = stream(*tok, c.ids, rng, max_chunk);
      EXPECT_TRUE(streamed.pieces_valid) << c.text;
      EXPECT_EQ(streamed.text, tok->decode(c.ids)) << c.text;
    }
    all.insert(all.end(), c.ids.begin(), c.ids.end());
  }
  Streamed streamed = stream(*tok, all, rng, 1);
  EXPECT_TRUE(streamed.pieces_valid);
  EXPECT_EQ(streamed.text, tok->decode(all));
}

INSTANTIATE_TEST_SUITE_P(All, StreamingGolden,
                         ::testing::Values(Named{"llama2", "tokenizers/llama2/tokenizer.model"},
                                           Named{"tok512", "models/stories260K/tokenizer.model"},
                                           Named{"llama3", "tokenizers/llama3"},
                                           Named{"qwen3", "tokenizers/qwen3"}),
                         [](const auto& info) { return info.param.golden; });

// The audit's repro: Llama-2 ids through the SentencePiece-style tokenizer.json. HF's ByteFallback
// decoder renders the run <0x92> (a stray continuation byte) as U+FFFD, and the run
// <0x6A><0xE9> as two U+FFFD once the token after it shows the run is over: the "j" decoded
// while the run was open must not have been emitted. HF tokenizers 0.23.3 decodes these ids (same
// conversion in Python) to "A\x1e Time\uFFFDák\uFFFD\uFFFD='".
TEST(StreamingDecoder, ByteFallbackRunIsHeldUntilItEnds) {
  const Tokenizer& tok = test::llama2_as_tokenizer_json();
  const std::vector<int32_t> ids = {68, 33, 5974, 149, 4985, 109, 236, 2433};
  StreamingDecoder decoder(tok);
  std::string out;
  for (int32_t id : ids) {
    std::string piece = decoder.push({id});
    EXPECT_EQ(utf8::first_invalid(piece), piece.size()) << "broken UTF-8 after id " << id;
    out += piece;
  }
  out += decoder.finish();
  EXPECT_EQ(out, tok.decode(ids));
  EXPECT_NE(out.find("\xEF\xBF\xBD\xEF\xBF\xBD"), std::string::npos) << "the run <0x6A><0xE9> is invalid";
}

// The tokenizers of the property test: the four of ../shared and the converted tokenizer.json.
const Tokenizer& property_tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
  if (name == "llama2-json") return test::llama2_as_tokenizer_json();
  auto& slot = loaded[name];
  if (!slot) {
    if (name == "llama2") slot = std::make_unique<SentencePieceTokenizer>(test_data_path("tokenizers/llama2/tokenizer.model"));
    if (name == "tok512") slot = std::make_unique<SentencePieceTokenizer>(test_data_path("models/stories260K/tokenizer.model"));
    if (name == "llama3") slot = load_tokenizer(test_data_path("tokenizers/llama3"));
    if (name == "qwen3") slot = load_tokenizer(test_data_path("tokenizers/qwen3"));
  }
  return *slot;
}

// Ids of the single-byte tokens: "<0xXX>" byte-fallback pieces, or byte-level symbols.
std::vector<int32_t> byte_token_ids(const Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (int b = 0; b < 256; ++b) {
    if (auto id = tok.token_to_id(fmt::format("<0x{:02X}>", b))) ids.push_back(*id);
    else if (auto symbol = tok.token_to_id(byte_level::byte_to_chars(static_cast<uint8_t>(b)))) ids.push_back(*symbol);
  }
  return ids;
}

class StreamingRandomIds : public ::testing::TestWithParam<std::string> {};

// Random id sequences streamed in random chunks: every piece is valid UTF-8 and the pieces add
// up to decode(all ids). Many ids are single bytes, so runs of bytes that are and are not valid
// UTF-8 are common; many are the first and last ids (control/special tokens in these
// vocabularies, which decode to nothing or to their content), so the decode window often starts
// on them.
TEST_P(StreamingRandomIds, PiecesAreValidUtf8AndAddUpToTheFullDecode) {
  const Tokenizer& tok = property_tokenizer(GetParam());
  const std::vector<int32_t> bytes = byte_token_ids(tok);
  ASSERT_EQ(bytes.size(), 256u);
  const int32_t last = tok.vocab_size() - 1;
  const std::vector<int32_t> edges = {0, 1, 2, last - 2, last - 1, last};
  std::mt19937 rng(20240917);
  std::uniform_int_distribution<int32_t> any_id(0, last);
  std::uniform_int_distribution<size_t> length(1, 40), kind(0, 7);
  auto random_id = [&] {
    size_t k = kind(rng);
    if (k < 3) return bytes[rng() % bytes.size()];
    if (k < 5) return edges[rng() % edges.size()];
    return any_id(rng);
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<int32_t> ids(length(rng));
    for (int32_t& id : ids) id = random_id();
    Streamed streamed = stream(tok, ids, rng, round % 2 ? 1 : 4);
    ASSERT_TRUE(streamed.pieces_valid) << "round " << round << ", ids " << ::testing::PrintToString(ids);
    ASSERT_EQ(streamed.text, tok.decode(ids)) << "round " << round << ", ids " << ::testing::PrintToString(ids);
  }
}

INSTANTIATE_TEST_SUITE_P(All, StreamingRandomIds,
                         ::testing::Values("llama2", "tok512", "llama3", "qwen3", "llama2-json"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

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
