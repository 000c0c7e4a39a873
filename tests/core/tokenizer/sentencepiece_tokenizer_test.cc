// SentencePiece tokenizer.model against the goldens, special-token policy, and load_tokenizer's
// choice for a directory holding only tokenizer.model.
#include "core/tokenizer/sentencepiece_tokenizer.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tokenizer/utf8.h"
#include "tests/core/tokenizer/golden_cases.h"

namespace drift {
namespace {

using test::test_data_path;

TEST(SentencePieceTokenizer, Llama2GoldenLines) {
  SentencePieceTokenizer tok(test_data_path("tokenizers/llama2/tokenizer.model"));
  auto cases = test::load_golden_cases("llama2");
  ASSERT_EQ(cases.size(), 178u);
  EXPECT_EQ(test::check_golden_cases(tok, cases, "llama2"), 178);
  EXPECT_EQ(tok.vocab_size(), 32000);
}

TEST(SentencePieceTokenizer, Tok512GoldenLines) {
  SentencePieceTokenizer tok(test_data_path("models/stories260K/tokenizer.model"));
  auto cases = test::load_golden_cases("tok512");
  ASSERT_EQ(cases.size(), 178u);
  EXPECT_EQ(test::check_golden_cases(tok, cases, "tok512"), 178);
  EXPECT_EQ(tok.vocab_size(), 512);
}

TEST(SentencePieceTokenizer, Stories260KPromptGetsBos) {
  auto tok = load_tokenizer(test_data_path("models/stories260K"));
  EXPECT_NE(dynamic_cast<SentencePieceTokenizer*>(tok.get()), nullptr);
  EXPECT_EQ(tok->encode_prompt("Once upon a time"), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->encode("Once upon a time"), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(tok->encode_prompt(""), (std::vector<int32_t>{1}));
  const SpecialTokens& special = tok->special_tokens();
  EXPECT_EQ(special.bos_id, 1);
  EXPECT_EQ(special.eos_ids, std::vector<int32_t>{2});
  EXPECT_TRUE(special.add_bos);
  EXPECT_FALSE(special.add_eos);
}

TEST(SentencePieceTokenizer, TokenToIdAndControlTokens) {
  SentencePieceTokenizer tok(test_data_path("tokenizers/llama2/tokenizer.model"));
  EXPECT_EQ(tok.token_to_id("<s>"), 1);
  EXPECT_EQ(tok.token_to_id("</s>"), 2);
  EXPECT_EQ(tok.token_to_id("<unk>"), 0);
  EXPECT_EQ(tok.token_to_id("no such piece"), std::nullopt);
  // Control tokens are invisible and unknown ids are skipped, as in sentencepiece/HF.
  EXPECT_EQ(tok.decode({1, 15043, 2}), tok.decode({15043}));
  EXPECT_EQ(tok.decode({15043, 999999, -3}), tok.decode({15043}));
}

TEST(SentencePieceTokenizer, RejectsInvalidUtf8) {
  SentencePieceTokenizer tok(test_data_path("tokenizers/llama2/tokenizer.model"));
  try {
    tok.encode("ab\xFF");
    FAIL() << "expected DriftError";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find("offset 2"), std::string::npos) << e.what();
  }
}

TEST(SentencePieceTokenizer, UnreadableModelNamesThePath) {
  std::string dir = test::make_temp_dir("sp-bad");
  std::string path = dir + "/tokenizer.model";
  std::ofstream(path) << "not a protobuf";
  try {
    SentencePieceTokenizer tok(path);
    FAIL() << "expected DriftError";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(SentencePieceTokenizer, DecodeOfPrefixIsPrefixOfDecode) {
  // The streaming decoder relies on this despite the dropped leading space of the first piece.
  for (const char* model : {"tokenizers/llama2/tokenizer.model", "models/stories260K/tokenizer.model"}) {
    SentencePieceTokenizer tok(test_data_path(model));
    for (const char* text : {" leading space", "  two spaces", "Once upon a time", "a\n\nb  c", "日本語"}) {
      std::vector<int32_t> ids = tok.encode(text);
      std::string whole = tok.decode(ids);
      for (size_t n = 0; n <= ids.size(); ++n) {
        std::string part = tok.decode(std::vector<int32_t>(ids.begin(), ids.begin() + n));
        // A truncated character renders as U+FFFD (one per byte); compare the stable part.
        part.resize(utf8::stable_prefix_length(part));
        EXPECT_TRUE(whole.starts_with(part)) << model << " '" << text << "' n=" << n << " part='" << part << "'";
      }
    }
  }
}

}  // namespace
}  // namespace drift
