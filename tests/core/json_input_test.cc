// JSON from user files: repeated keys and runaway nesting are refused naming the file, for every
// loader that reads one (config.json, generation_config.json, tokenizer files, safetensors).
#include "core/json_input.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/model/model_config.h"
#include "core/tokenizer/tokenizer.h"
#include "support/test_data.h"

namespace drift {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const DriftError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonInput, RepeatedKeysAreRefusedAtAnyDepth) {
  EXPECT_EQ(error_of([] { parse_json_input(R"({"a": 1, "a": 2})", "f.json"); }), "f.json: key 'a' appears more than once");
  EXPECT_EQ(error_of([] { parse_json_input(R"({"x": [{"b": 1, "b": 1}]})", "f.json"); }),
            "f.json: key 'b' appears more than once");
  // The same key in sibling objects is no repeat.
  EXPECT_EQ(parse_json_input(R"({"x": {"k": 1}, "y": {"k": 2}})", "f.json")["y"]["k"], 2);
  // Repeats whose values are containers, in both flavours; the first repeat in the text is named.
  EXPECT_EQ(error_of([] { parse_json_input(R"({"s": {"k": 1}, "o": {}, "o": {"k": 2}, "s": 1})", "f.json"); }),
            "f.json: key 'o' appears more than once");
  EXPECT_EQ(error_of([] { parse_ordered_json_input(R"([{"m": []}, {"n": [1], "n": [2]}])", "t.json"); }),
            "t.json: key 'n' appears more than once");
  EXPECT_EQ(parse_ordered_json_input(R"({"b": {"k": 1}, "a": {"k": 2}})", "t.json").begin().key(), "b");
}

TEST(JsonInput, NestingIsBounded) {
  const std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_EQ(error_of([&] { parse_json_input(deep, "f.json"); }), "f.json: JSON nests deeper than 128 levels");
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_NO_THROW(parse_json_input(ok, "f.json"));
  // A million levels is refused without exhausting the stack.
  const std::string bomb = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_NE(error_of([&] { parse_json_input(bomb, "f.json"); }).find("deeper than"), std::string::npos);
}

TEST(JsonInput, CorruptJsonNamesTheFile) {
  EXPECT_NE(error_of([] { parse_json_input("{\"a\": ", "f.json"); }).find("f.json: corrupt JSON"), std::string::npos);
}

// The loaders use it: a config.json that says vocab_size twice is refused (HF would take the last).
TEST(JsonInput, ModelConfigWithRepeatedFieldIsRefused) {
  EXPECT_EQ(error_of([] { parse_model_config(R"({"model_type": "llama", "vocab_size": 8, "vocab_size": 9})", "c.json"); }),
            "c.json: key 'vocab_size' appears more than once");
}

class SpecialTokenFiles : public ::testing::Test {
 protected:
  std::string dir_ = test::make_temp_dir("drift-special");
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
};

TEST_F(SpecialTokenFiles, IdsBeyondInt32AreRefusedNotTruncated) {
  write("generation_config.json", R"({"eos_token_id": 4294967298})");
  const std::string error = error_of([&] { load_special_tokens(dir_); });
  EXPECT_NE(error.find("generation_config.json: field 'eos_token_id' must be a non-negative integer"), std::string::npos)
      << error;
}

TEST_F(SpecialTokenFiles, AddedTokensDecoderKeysMustBeIds) {
  // "4294967297" would have been truncated to id 1; "-1" and "x" name no id either.
  write("tokenizer_config.json",
        R"({"eos_token": "</s>", "added_tokens_decoder": {"4294967297": {"content": "</s>"}, "-1": {"content": "</s>"},
            "x": {"content": "</s>"}, "7": {"content": 5}}})");
  SpecialTokens special;
  EXPECT_NO_THROW(special = load_special_tokens(dir_));
  EXPECT_TRUE(special.eos_ids.empty());
  write("tokenizer_config.json", R"({"eos_token": "</s>", "added_tokens_decoder": {"2": {"content": "</s>"}}})");
  EXPECT_EQ(load_special_tokens(dir_).eos_ids, std::vector<int32_t>{2});
}

TEST_F(SpecialTokenFiles, ADirectoryIsNotAConfigFile) {
  std::filesystem::create_directories(dir_ + "/generation_config.json");
  EXPECT_NE(error_of([&] { load_special_tokens(dir_); }).find("generation_config.json' is a directory, not a file"), std::string::npos);
}

}  // namespace
}  // namespace drift
