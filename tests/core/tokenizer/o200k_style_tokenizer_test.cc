// GPT-OSS's tokenizer form (issue 34, part 6): a byte-level BPE behind the o200k pre-tokenizer
// (Split on o200k's regex, then ByteLevel without its own regex) with harmony's special tokens,
// and the harmony chat template rendered and encoded as transformers' apply_chat_template does.
// The tokenizer is a small one of that exact form, and the expected ids, texts and renders are
// Hugging Face tokenizers' / transformers' (tools/gptoss/make_o200k_style_tokenizer.py).
#include <ctime>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/chat_template/model_chat_template.h"
#include "core/tokenizer/pre_tokenizer.h"
#include "core/tokenizer/tokenizer_json_loader.h"
#include "tests/core/tokenizer/golden_cases.h"

namespace drift {
namespace {

using test::test_data_path;

constexpr int32_t kFirstSpecial = 2000;  // o200k_harmony's 199998: <|startoftext|>
constexpr int32_t kEndOfText = kFirstSpecial + 1;
constexpr int32_t kReturn = kFirstSpecial + 4;
constexpr int32_t kStart = kFirstSpecial + 8;
constexpr int32_t kMessage = kFirstSpecial + 10;
constexpr int32_t kCall = kFirstSpecial + 14;

std::string o200k_dir() { return test_data_path("tokenizers/o200k-style"); }

const Tokenizer& o200k_style() {
  static auto tok = load_tokenizer(o200k_dir());
  return *tok;
}

TEST(O200kStyleTokenizer, GoldenLinesMatchHfTokenizers) {
  auto cases = test::load_golden_cases("o200k-style");
  ASSERT_EQ(cases.size(), 262u);
  EXPECT_EQ(test::check_golden_cases(o200k_style(), cases, "o200k-style"), 262);
}

// The pre-tokenizer alone (Split on o200k's regex, then ByteLevel) gives HF's pieces: these depend
// on the regex (case classes, contractions in any case, digits in threes, trailing newlines and
// slashes on punctuation), not on the vocabulary.
TEST(O200kStyleTokenizer, PreTokenizerPiecesMatchHfTokenizers) {
  std::ifstream file(o200k_dir() + "/tokenizer.json");
  const auto pre_tokenizer = make_pre_tokenizer(nlohmann::json::parse(file)["pre_tokenizer"], "pre_tokenizer");
  ASSERT_NE(pre_tokenizer, nullptr);
  std::ifstream lines(o200k_dir() + "/pre_tokens.jsonl");
  int checked = 0;
  for (std::string line; std::getline(lines, line); ++checked) {
    const auto expected = nlohmann::json::parse(line);
    std::vector<PreToken> pieces = {{expected["text"].get<std::string>(), true}};
    pre_tokenizer->pre_tokenize(pieces);
    std::vector<std::string> texts;
    for (const PreToken& piece : pieces) texts.push_back(piece.text);
    EXPECT_EQ(texts, expected["pieces"].get<std::vector<std::string>>()) << expected["text"];
  }
  EXPECT_EQ(checked, 262);
}

TEST(O200kStyleTokenizer, PolicyFollowsItsFiles) {
  const SpecialTokens& s = o200k_style().special_tokens();
  EXPECT_EQ(s.bos_id, kFirstSpecial);  // <|startoftext|>, never added: GPT-OSS adds no BOS
  EXPECT_FALSE(s.add_bos);
  EXPECT_EQ(s.eos_ids, std::vector<int32_t>{kReturn});
  EXPECT_EQ(s.pad_id, kEndOfText);
  EXPECT_EQ(o200k_style().encode_prompt("<|start|>user<|message|>hi"),
            o200k_style().encode("<|start|>user<|message|>hi"));
}

TEST(O200kStyleTokenizer, HarmonySpecialTokensAreWholeTokens) {
  std::vector<int32_t> ids = o200k_style().encode("<|start|>assistant<|message|>{}<|call|>");
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.front(), kStart);
  EXPECT_EQ(ids.back(), kCall);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), kMessage), 1);
}

// transformers' apply_chat_template(tokenize=True) on the harmony template: the same text, then
// the same ids (the rendered text encoded without added special tokens).
TEST(O200kStyleTokenizer, HarmonyChatsRenderAndEncodeAsTransformers) {
  std::ifstream in(o200k_dir() + "/harmony_chats.json");
  const auto chats = nlohmann::ordered_json::parse(in);
  ASSERT_EQ(chats.size(), 6u);
  const auto model = load_model_chat_template(o200k_dir());
  ASSERT_TRUE(model.has_value());
  for (const auto& chat : chats) {
    ChatTemplateInputs inputs;
    inputs.messages = chat["messages"];
    inputs.tools = chat.contains("tools") ? chat["tools"] : nlohmann::ordered_json();
    inputs.add_generation_prompt = chat["add_generation_prompt"].get<bool>();
    inputs.bos_token = model->bos_token;
    inputs.eos_token = model->eos_token;
    if (chat.contains("kwargs")) inputs.extra_context = chat["kwargs"];
    inputs.now = std::time_t{1785067200};  // 2026-07-26T12:00:00Z, the recording's pinned clock
    const std::string text = model->tmpl.render(inputs);
    EXPECT_EQ(text, chat["text"].get<std::string>());
    EXPECT_EQ(o200k_style().encode(text), chat["ids"].get<std::vector<int32_t>>()) << text;
  }
}

}  // namespace
}  // namespace drift
