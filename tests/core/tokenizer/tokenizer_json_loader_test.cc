// tokenizer.json loading: malformed files give errors naming the field, small hand-written
// files pin down each component (SentencePiece-style BPE, added-token rules, post-processor
// defaults), and load_tokenizer picks the right file.
#include "core/tokenizer/tokenizer_json_loader.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/tokenizer/json_tokenizer.h"
#include "core/tokenizer/sentencepiece_tokenizer.h"
#include "support/test_data.h"

namespace drift {
namespace {

using nlohmann::json;

// A tiny byte-level-free BPE: vocab a b c ab abc, merges a+b, ab+c.
json tiny_bpe() {
  return json::parse(R"({
    "version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
    "post_processor": null, "decoder": null,
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, " ": 5},
              "merges": ["a b", ["ab", "c"]]}
  })");
}

std::string error_of(const json& doc) {
  try {
    tokenizer_from_json(doc, "test/tokenizer.json");
  } catch (const DriftError& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_error(const json& doc, const std::vector<std::string>& fragments) {
  std::string message = error_of(doc);
  EXPECT_NE(message.find("test/tokenizer.json"), std::string::npos) << message;
  for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' not in: " << message;
}

// Hardening item 12: tables are indexed by id, so one id of 10^8 in a tiny file used to allocate
// 3 GB. Ids may leave gaps, but only up to 4x the vocabulary (at least 65536).
TEST(TokenizerJsonLoader, AbsurdTokenIdsAreRefusedBeforeAllocating) {
  json doc = tiny_bpe();
  doc["model"]["vocab"]["abc"] = 100000000;
  expect_error(doc, {"model.vocab['abc'] = 100000000", "must be below 65536"});
  doc = tiny_bpe();
  doc["added_tokens"] = json::parse(R"([{"id": 100000000, "content": "<x>", "special": true}])");
  expect_error(doc, {"added_tokens: id 100000000 is too large", "must be below 65536"});
  doc["added_tokens"] = json::parse(R"([{"id": 4294967297, "content": "<x>", "special": true}])");
  expect_error(doc, {"added_tokens[0].id must be a non-negative 32-bit integer, got 4294967297"});
  // A gap well inside the bound is fine.
  doc = tiny_bpe();
  doc["model"]["vocab"]["abc"] = 60000;
  EXPECT_EQ(tokenizer_from_json(doc, "gap")->encode("abc"), std::vector<int32_t>{60000});
}

TEST(TokenizerJsonLoader, TinyBpeMergesByRank) {
  auto tok = tokenizer_from_json(tiny_bpe(), "tiny");
  EXPECT_EQ(tok->encode("abc"), (std::vector<int32_t>{4}));
  EXPECT_EQ(tok->encode("abcab ca"), (std::vector<int32_t>{4, 3, 5, 2, 0}));
  EXPECT_EQ(tok->decode({4, 3}), "abc ab");  // no decoder: tokens joined with spaces, as HF does
}

TEST(TokenizerJsonLoader, MalformedFilesNameTheField) {
  json doc = tiny_bpe();
  doc.erase("model");
  EXPECT_EQ(error_of(doc), "test/tokenizer.json: top-level field 'model' is missing");

  doc = tiny_bpe();
  doc["model"]["type"] = "Unigram";
  expect_error(doc, {"model.type", "Unigram", "BPE"});

  doc = tiny_bpe();
  doc["model"]["merges"][0] = "a b c";
  expect_error(doc, {"model.merges[0]", "a b c"});

  doc = tiny_bpe();
  doc["model"]["merges"][1] = json::array({"ab", "zz"});
  expect_error(doc, {"model.merges[1]", "'zz'", "not in the vocabulary"});

  doc = tiny_bpe();
  doc["model"]["merges"][0] = "b c";  // "bc" itself is not a token
  expect_error(doc, {"model.merges[0]", "merged token 'bc'"});

  doc = tiny_bpe();
  doc["model"]["merges"] = 7;
  expect_error(doc, {"model.merges", "list"});

  doc = tiny_bpe();
  doc["model"]["vocab"]["d"] = "six";
  expect_error(doc, {"model.vocab['d']", "six"});

  doc = tiny_bpe();
  doc["pre_tokenizer"] = json::parse(R"({"type": "Sequence", "pretokenizers": [{"type": "Bogus"}]})");
  expect_error(doc, {"pre_tokenizer.pretokenizers[0].type", "Bogus"});

  doc = tiny_bpe();
  doc["pre_tokenizer"] = json::parse(R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})");
  expect_error(doc, {"pre_tokenizer.pattern", "(unclosed"});

  doc = tiny_bpe();
  doc["pre_tokenizer"] = json::parse(R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"})");
  expect_error(doc, {"pre_tokenizer.behavior", "Sideways"});

  doc = tiny_bpe();
  doc["normalizer"] = json::parse(R"({"type": "Precompiled"})");
  expect_error(doc, {"normalizer.type", "Precompiled"});

  doc = tiny_bpe();
  doc["decoder"] = json::parse(R"({"type": "Strip"})");
  expect_error(doc, {"decoder.content", "missing"});

  doc = tiny_bpe();
  doc["added_tokens"] = json::parse(R"([{"content": "<x>"}])");
  expect_error(doc, {"added_tokens[0].id", "missing"});
}

TEST(TokenizerJsonLoader, UnreadableFileNamesThePath) {
  std::string dir = test::make_temp_dir("tokjson");
  std::ofstream(dir + "/tokenizer.json") << "{ not json";
  try {
    load_tokenizer_json(dir + "/tokenizer.json");
    FAIL() << "expected DriftError";
  } catch (const DriftError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/tokenizer.json"), std::string::npos) << e.what();
  }
}

// The layout HF writes for Llama-2/Mistral-style tokenizer.json files.
json sentencepiece_style(json vocab, json merges) {
  json doc = json::parse(R"({
    "added_tokens": [
      {"id": 0, "content": "<unk>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
      {"id": 1, "content": "<s>", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}],
    "normalizer": {"type": "Sequence", "normalizers": [
      {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
    "decoder": {"type": "Sequence", "decoders": [
      {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
      {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true}
  })");
  doc["model"]["vocab"] = std::move(vocab);
  doc["model"]["merges"] = std::move(merges);
  return doc;
}

TEST(TokenizerJsonLoader, SentencePieceStyleBpeWithByteFallback) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"▁", 2}, {"h", 3}, {"i", 4}, {"hi", 5}, {"▁hi", 6}};
  for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = 7 + b;
  auto tok = tokenizer_from_json(sentencepiece_style(vocab, {"h i", "▁ hi"}), "sp-style");
  EXPECT_EQ(tok->encode("hi hi"), (std::vector<int32_t>{6, 6}));
  // "é" is not in the vocabulary: its two UTF-8 bytes fall back to <0xC3><0xA9>.
  EXPECT_EQ(tok->encode("é"), (std::vector<int32_t>{2, 7 + 0xC3, 7 + 0xA9}));
  EXPECT_EQ(tok->decode({2, 7 + 0xC3, 7 + 0xA9, 6}), "é hi");
  EXPECT_EQ(tok->decode({6, 7 + 0xC3}), "hi\xEF\xBF\xBD");  // a lone byte: U+FFFD, as HF
  // Added tokens split the text; each text segment gets its own "▁" prefix (HF legacy rule).
  EXPECT_EQ(tok->encode("hi<s>hi"), (std::vector<int32_t>{6, 1, 6}));
  // TemplateProcessing [<s>, $A] means: add BOS.
  EXPECT_TRUE(tok->special_tokens().add_bos);
  EXPECT_EQ(tok->special_tokens().bos_id, 1);
  EXPECT_EQ(tok->encode_prompt("hi"), (std::vector<int32_t>{1, 6}));
}

TEST(TokenizerJsonLoader, UnknownCharactersWithoutByteFallbackFuseIntoUnk) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"▁", 2}, {"h", 3}, {"i", 4}, {"hi", 5}, {"▁hi", 6}};
  json doc = sentencepiece_style(vocab, {"h i", "▁ hi"});
  doc["model"]["byte_fallback"] = false;
  auto tok = tokenizer_from_json(doc, "no-fallback");
  EXPECT_EQ(tok->encode("éè hi"), (std::vector<int32_t>{2, 0, 6}));  // fuse_unk: one <unk>
}

TEST(TokenizerJsonLoader, AddedTokenStripAndSingleWordRules) {
  json doc = tiny_bpe();
  doc["added_tokens"] = json::parse(R"([
    {"id": 10, "content": "<L>", "special": true, "normalized": false, "lstrip": true, "rstrip": false, "single_word": false},
    {"id": 11, "content": "<R>", "special": true, "normalized": false, "lstrip": false, "rstrip": true, "single_word": false},
    {"id": 12, "content": "cab", "special": false, "normalized": false, "lstrip": false, "rstrip": false, "single_word": true},
    {"id": 13, "content": "<R>x", "special": true, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}])");
  auto tok = tokenizer_from_json(doc, "added");
  EXPECT_EQ(tok->encode("a  <L>b"), (std::vector<int32_t>{0, 10, 1}));    // lstrip eats the spaces before
  EXPECT_EQ(tok->encode("a<R>  b"), (std::vector<int32_t>{0, 11, 1}));    // rstrip eats the spaces after
  EXPECT_EQ(tok->encode("a<R>xb"), (std::vector<int32_t>{0, 13, 1}));     // longest match wins
  EXPECT_EQ(tok->encode("cab"), (std::vector<int32_t>{12}));
  EXPECT_EQ(tok->encode("acab"), (std::vector<int32_t>{0, 2, 3}));        // not a single word here
  EXPECT_EQ(tok->token_to_id("<L>"), 10);
  EXPECT_EQ(tok->vocab_size(), 14);
}

TEST(TokenizerJsonLoader, MetaspaceAndDigitsPreTokenizers) {
  json vocab = {{"▁", 0}, {"a", 1}, {"▁a", 2}, {"1", 3}, {"2", 4}};
  json doc = json::parse(R"({"added_tokens": [],
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
      {"type": "Digits", "individual_digits": true}]},
    "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
    "model": {"type": "BPE", "merges": ["▁ a"]}})");
  doc["model"]["vocab"] = vocab;
  auto tok = tokenizer_from_json(doc, "metaspace");
  EXPECT_EQ(tok->encode("a a12"), (std::vector<int32_t>{2, 2, 3, 4}));
  EXPECT_EQ(tok->decode({2, 2, 3, 4}), "a a12");
}

TEST(LoadTokenizer, PrefersTokenizerJsonThenTokenizerModel) {
  namespace fs = std::filesystem;
  std::string dir = test::make_temp_dir("load-tok");
  try {
    load_tokenizer(dir);
    FAIL() << "expected DriftError";
  } catch (const DriftError& e) {
    std::string m = e.what();
    for (const char* f : {"tokenizer.json", "tokenizer.model"}) EXPECT_NE(m.find(f), std::string::npos) << m;
    EXPECT_NE(m.find(dir), std::string::npos) << m;
  }
  fs::copy_file(test::test_data_path("models/stories260K/tokenizer.model"), dir + "/tokenizer.model");
  EXPECT_NE(dynamic_cast<SentencePieceTokenizer*>(load_tokenizer(dir).get()), nullptr);
  std::ofstream(dir + "/tokenizer.json") << tiny_bpe().dump();
  auto tok = load_tokenizer(dir);
  EXPECT_NE(dynamic_cast<JsonTokenizer*>(tok.get()), nullptr);
  EXPECT_EQ(tok->encode("abc"), (std::vector<int32_t>{4}));
  EXPECT_FALSE(tok->special_tokens().add_bos);  // tokenizer.json without a template adds nothing
}

TEST(LoadSpecialTokens, MergesConfigGenerationConfigAndTokenizerConfig) {
  std::string dir = test::make_temp_dir("special");
  std::ofstream(dir + "/tokenizer.json") << tiny_bpe().dump();
  std::ofstream(dir + "/config.json") << R"({"bos_token_id": 0, "eos_token_id": 2, "pad_token_id": null})";
  std::ofstream(dir + "/generation_config.json") << R"({"eos_token_id": [1, 2]})";
  std::ofstream(dir + "/tokenizer_config.json")
      << R"({"bos_token": {"content": "ab"}, "eos_token": "abc", "add_bos_token": true, "add_eos_token": true})";
  auto tok = load_tokenizer(dir);
  const SpecialTokens& s = tok->special_tokens();
  EXPECT_EQ(s.bos_id, 3);
  EXPECT_EQ(s.eos_ids, (std::vector<int32_t>{4, 1, 2}));  // tokenizer's own eos first
  EXPECT_EQ(tok->encode_prompt("c"), (std::vector<int32_t>{3, 2, 4}));
  // Without a tokenizer, strings resolve only through added_tokens_decoder.
  SpecialTokens plain = load_special_tokens(dir);
  EXPECT_EQ(plain.bos_id, 0);
  EXPECT_EQ(plain.eos_ids, (std::vector<int32_t>{1, 2}));

  std::ofstream(dir + "/tokenizer_config.json") << R"({"eos_token": "nope"})";
  try {
    load_tokenizer(dir);
    FAIL() << "expected DriftError";
  } catch (const DriftError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("tokenizer_config.json"), std::string::npos) << m;
    EXPECT_NE(m.find("eos_token"), std::string::npos) << m;
    EXPECT_NE(m.find("nope"), std::string::npos) << m;
  }
  std::ofstream(dir + "/tokenizer_config.json") << R"({"add_bos_token": "yes"})";
  EXPECT_THROW(load_tokenizer(dir), DriftError);
}

}  // namespace
}  // namespace drift
