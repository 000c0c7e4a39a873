// SentencePiece-style tokenizer.json (Prepend/Replace normalizer, BPE with byte_fallback,
// Replace/ByteFallback/Fuse/Strip decoder) checked against the Llama-2 goldens: the file built
// from llama2/tokenizer.model (sentencepiece_style_json.h) must give exactly sentencepiece's ids
// and text for every golden line.
#include <gtest/gtest.h>

#include "tests/core/tokenizer/golden_cases.h"
#include "tests/core/tokenizer/sentencepiece_style_json.h"

namespace drift {
namespace {

TEST(SentencePieceStyleJson, Llama2GoldenLinesThroughConvertedTokenizerJson) {
  auto cases = test::load_golden_cases("llama2");
  ASSERT_EQ(cases.size(), 178u);
  EXPECT_EQ(test::check_golden_cases(test::llama2_as_tokenizer_json(), cases,
                                     "llama2 via SentencePiece-style tokenizer.json"),
            178);
}

}  // namespace
}  // namespace drift
