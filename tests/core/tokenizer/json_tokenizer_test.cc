// tokenizer.json (BPE) against the HF goldens for Llama-3 and Qwen3, HF-generated ids for edge
// strings, round-trip property test, and the BOS/EOS policy those files imply.
#include "core/tokenizer/json_tokenizer.h"

#include <fstream>
#include <random>

#include <gtest/gtest.h>
#include <utf8proc.h>

#include "core/error.h"
#include "core/tokenizer/tokenizer_json_loader.h"
#include "core/tokenizer/utf8.h"
#include "tests/core/tokenizer/golden_cases.h"

namespace drift {
namespace {

using test::test_data_path;

const Tokenizer& llama3() {
  static auto tok = load_tokenizer(test_data_path("tokenizers/llama3"));
  return *tok;
}
const Tokenizer& qwen3() {
  static auto tok = load_tokenizer(test_data_path("tokenizers/qwen3"));
  return *tok;
}

TEST(JsonTokenizer, Llama3GoldenLines) {
  auto cases = test::load_golden_cases("llama3");
  ASSERT_EQ(cases.size(), 178u);
  EXPECT_EQ(test::check_golden_cases(llama3(), cases, "llama3"), 178);
}

TEST(JsonTokenizer, Qwen3GoldenLines) {
  auto cases = test::load_golden_cases("qwen3");
  ASSERT_EQ(cases.size(), 178u);
  EXPECT_EQ(test::check_golden_cases(qwen3(), cases, "qwen3"), 178);
}

TEST(JsonTokenizer, LoadTokenizerPicksJsonTokenizer) {
  EXPECT_NE(dynamic_cast<const JsonTokenizer*>(&llama3()), nullptr);
  EXPECT_NE(dynamic_cast<const JsonTokenizer*>(&qwen3()), nullptr);
  EXPECT_EQ(llama3().vocab_size(), 128256);
  EXPECT_EQ(qwen3().vocab_size(), 151669);
}

TEST(JsonTokenizer, SpecialTokensAreMatchedBeforeTheModelAndNeverSplit) {
  EXPECT_EQ(llama3().token_to_id("<|begin_of_text|>"), 128000);
  std::vector<int32_t> ids = llama3().encode("a<|eot_id|>b<|begin_of_text|><|begin_of_text|>");
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(ids[1], 128009);
  EXPECT_EQ(ids[3], 128000);
  EXPECT_EQ(ids[4], 128000);
  EXPECT_EQ(llama3().decode(ids), "a<|eot_id|>b<|begin_of_text|><|begin_of_text|>");
  // A prefix of a special token is ordinary text.
  std::vector<int32_t> partial = llama3().encode("<|begin_of_tex");
  EXPECT_GT(partial.size(), 1u);
  EXPECT_EQ(std::count(partial.begin(), partial.end(), 128000), 0);
  std::vector<int32_t> chat = qwen3().encode("<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(chat.front(), 151644);
  EXPECT_EQ(chat.back(), 151645);
}

TEST(JsonTokenizer, Llama3PolicyFollowsItsFiles) {
  // This tokenizer.json's post-processor is plain ByteLevel (no TemplateProcessing) and its
  // tokenizer_config.json has no add_bos_token, so HF adds nothing; BOS/EOS ids still resolve.
  const SpecialTokens& s = llama3().special_tokens();
  EXPECT_EQ(s.bos_id, 128000);
  EXPECT_EQ(s.eos_ids, std::vector<int32_t>{128001});
  EXPECT_FALSE(s.add_bos);
  EXPECT_EQ(llama3().encode_prompt("Hello world"), (std::vector<int32_t>{9906, 1917}));
}

// The post-processor of Meta's official Llama-3 tokenizer.json: Sequence [ByteLevel,
// TemplateProcessing [<|begin_of_text|>, $A]]. With it in the shared file, HF tokenizers 0.23.3
// gives Tokenizer.encode("Hello world").ids == [128000, 9906, 1917] (add_special_tokens=True).
TEST(JsonTokenizer, Llama3OfficialSequencePostProcessorAddsBos) {
  std::ifstream in(test_data_path("tokenizers/llama3/tokenizer.json"));
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["post_processor"] = nlohmann::json::parse(R"({"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
    {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
              {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}]})");
  auto tok = tokenizer_from_json(doc, "llama3 with the official post-processor");
  EXPECT_TRUE(tok->special_tokens().add_bos);
  EXPECT_EQ(tok->special_tokens().bos_id, 128000);
  EXPECT_FALSE(tok->special_tokens().add_eos);
  EXPECT_EQ(tok->encode_prompt("Hello world"), (std::vector<int32_t>{128000, 9906, 1917}));
  EXPECT_EQ(tok->encode("Hello world"), (std::vector<int32_t>{9906, 1917}));
}

TEST(JsonTokenizer, Qwen3PolicyFollowsItsFiles) {
  const SpecialTokens& s = qwen3().special_tokens();
  EXPECT_EQ(s.bos_id, std::nullopt);  // "bos_token": null
  EXPECT_EQ(s.eos_ids, std::vector<int32_t>{151645});
  EXPECT_EQ(s.pad_id, 151643);
  EXPECT_FALSE(s.add_bos);
}

// Random strings over ASCII, Latin, combining marks, CJK, emoji and whitespace: the mixes
// where byte-level BPE and the split regex could lose or reorder bytes.
std::string random_unicode(std::mt19937& rng) {
  static const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7E}, {0x09, 0x0D}, {0xA0, 0x24F}, {0x300, 0x36F}, {0x370, 0x3FF}, {0x400, 0x4FF},
      {0x600, 0x6FF}, {0x900, 0x97F}, {0x3040, 0x30FF}, {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3},
      {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x2000, 0x206F}, {0xFE00, 0xFE0F}, {0x10000, 0x10FFFF}};
  std::string out;
  size_t length = std::uniform_int_distribution<size_t>(0, 40)(rng);
  for (size_t i = 0; i < length; ++i) {
    auto [lo, hi] = ranges[std::uniform_int_distribution<size_t>(0, ranges.size() - 1)(rng)];
    char32_t cp = std::uniform_int_distribution<char32_t>(lo, hi)(rng);
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';
    utf8::append_code_point(out, cp);
  }
  return out;
}

std::string nfc(const std::string& s) {
  utf8proc_uint8_t* out = nullptr;
  auto len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                          &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  EXPECT_GE(len, 0);
  std::string r(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
  std::free(out);
  return r;
}

TEST(JsonTokenizer, ByteLevelRoundTripOnRandomUnicode) {
  std::mt19937 rng(20240601);
  for (int i = 0; i < 3000; ++i) {
    std::string text = random_unicode(rng);
    ASSERT_EQ(llama3().decode(llama3().encode(text)), text) << "llama3, case " << i;
    ASSERT_EQ(qwen3().decode(qwen3().encode(text)), nfc(text)) << "qwen3, case " << i;  // NFC normaliser
  }
}

// Edge strings (Unicode whitespace such as U+180E, U+00A0, U+2028, U+3000; invisible characters;
// combining marks; emoji ZWJ sequences; mixed scripts; long digit runs; contractions) with the
// ids and text HF tokenizers 0.23.3 gives, from hf_edge_cases.json (written by
// `python3 tests/core/tokenizer/hf_edge_cases.py ../shared`, see that script). Where the random
// round trip above only shows nothing is lost, these pin down where the pre-tokenizer splits.
TEST(JsonTokenizer, EdgeStringsMatchHfTokenizers) {
  std::ifstream in(test::source_dir() + "/tests/core/tokenizer/hf_edge_cases.json");
  ASSERT_TRUE(in) << "cannot open tests/core/tokenizer/hf_edge_cases.json";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  ASSERT_GE(fixture["cases"].size(), 60u);
  for (const auto& [name, tok] : {std::pair<std::string, const Tokenizer*>{"llama3", &llama3()}, {"qwen3", &qwen3()}}) {
    for (const auto& c : fixture["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto ids = c[name]["ids"].get<std::vector<int32_t>>();
      EXPECT_EQ(tok->encode(text), ids) << name << " text " << c["text"].dump(-1, ' ', true);
      EXPECT_EQ(tok->decode(ids), c[name]["decoded"].get<std::string>()) << name << " text " << c["text"].dump(-1, ' ', true);
    }
  }
}

TEST(JsonTokenizer, Qwen3NormalisesToNfc) {
  // "e" + combining acute becomes the precomposed "é" before tokenization.
  EXPECT_EQ(qwen3().encode("cafe\xCC\x81"), qwen3().encode("caf\xC3\xA9"));
  EXPECT_NE(llama3().encode("cafe\xCC\x81"), llama3().encode("caf\xC3\xA9"));
}

TEST(JsonTokenizer, LongWhitespaceRunsAndInvalidUtf8) {
  std::string spaces(100000, ' ');
  EXPECT_EQ(llama3().decode(llama3().encode(spaces + "x")), spaces + "x");
  EXPECT_THROW(llama3().encode("abc\xC3"), DriftError);
}

}  // namespace
}  // namespace drift
