// The text path of `drift generate` (streamed and --json), `drift score` and `drift tokenize` on
// a checkpoint directory
// that holds a tokenizer.json: the golden tiny Llama (vocab 512) plus a small byte-level BPE
// tokenizer.json written here, next to a SentencePiece tokenizer.model that must lose to it.
// Expected ids and texts are computed in this file from the merges and GPT-2's byte mapping,
// independently of the engine's tokenizer code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::json_lines;
using test::run_command;
using test::shell_quote;

constexpr int32_t kBosId = 300;
constexpr const char* kBos = "<|bos|>";
constexpr int32_t kModelVocab = 512;  // golden/llama-tiny
constexpr const char* kText = "hello world";

std::string drift() { return shell_quote(test::drift_exe()); }

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves; the other 68 bytes,
// in byte order, become U+0100, U+0101, ...
std::vector<std::string> byte_symbols() {
  std::vector<std::string> symbols(256);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    append_utf8(symbols[b], printable ? static_cast<char32_t>(b) : next++);
  }
  return symbols;
}

// The inverse mapping: one byte-level symbol (UTF-8 text of one code point) -> its byte.
std::map<std::string, uint8_t> symbol_bytes() {
  std::map<std::string, uint8_t> out;
  const auto symbols = byte_symbols();
  for (int b = 0; b < 256; ++b) out[symbols[b]] = static_cast<uint8_t>(b);
  return out;
}

// Rust's String::from_utf8_lossy (what HF's ByteLevel decoder applies): one U+FFFD for each
// maximal prefix of a well-formed sequence that cannot be completed (at least one byte).
std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  size_t i = 0;
  while (i < bytes.size()) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    size_t want = b0 < 0x80 ? 1 : (b0 >= 0xC2 && b0 <= 0xDF) ? 2 : (b0 >= 0xE0 && b0 <= 0xEF) ? 3
                              : (b0 >= 0xF0 && b0 <= 0xF4) ? 4 : 0;
    if (want == 1) {
      out += bytes[i++];
      continue;
    }
    size_t got = want == 0 ? 0 : 1;
    while (want > 0 && got < want && i + got < bytes.size()) {
      const auto b = static_cast<unsigned char>(bytes[i + got]);
      unsigned char lo = 0x80, hi = 0xBF;
      if (got == 1) {
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
      }
      if (b < lo || b > hi) break;
      ++got;
    }
    if (want > 0 && got == want) {
      out.append(bytes, i, want);
      i += want;
    } else {
      out += "\xEF\xBF\xBD";
      i += std::max<size_t>(got, 1);
    }
  }
  return out;
}

// The tokenizer written for the test: ids 0..255 are the byte-level symbols (id = byte value),
// five merges make ids 256..260, filler tokens cover the rest of the model's vocabulary, and
// "<|bos|>" is an added special token with id 300.
json make_tokenizer_json() {
  const auto symbols = byte_symbols();
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[symbols[b]] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {symbols[' '], "w"}, {"o", "r"}};
  json merge_list = json::array();
  int32_t next = 256;
  for (const auto& [left, right] : merges) {
    vocab[left + right] = next++;
    merge_list.push_back(left + " " + right);
  }
  for (int32_t id = next; id < kModelVocab; ++id)
    if (id != kBosId) vocab["<t" + std::to_string(id) + ">"] = id;
  vocab[kBos] = kBosId;
  json added = json::array({{{"id", kBosId},
                             {"content", kBos},
                             {"single_word", false},
                             {"lstrip", false},
                             {"rstrip", false},
                             {"normalized", false},
                             {"special", true}}});
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merge_list}}}};
}

// What the merges give for "hello world", worked by hand:
//   GPT-2 regex pieces "hello", " world" -> byte-level "hello", "Ġworld"
//   "hello":  h e l l o -> he l l o -> he ll o -> hell o       = 258, 'o'
//   "Ġworld": Ġ w o r l d -> Ġw o r l d -> Ġw or l d           = 259, 260, 'l', 'd'
// and the BOS first, as tokenizer_config.json asks.
const std::vector<int32_t> kExpectedPromptIds = {kBosId, 258, 'o', 259, 260, 'l', 'd'};

// Decodes ids through the byte-level mapping, as HF's ByteLevel decoder does: special tokens
// contribute their content, every other token's symbols map back to bytes, and the bytes are
// read as UTF-8 (lossily).
std::string decode_by_hand(const json& tokenizer, const std::vector<int32_t>& ids) {
  std::map<int32_t, std::string> id_to_token;
  for (const auto& [token, id] : tokenizer["model"]["vocab"].items()) id_to_token[id.get<int32_t>()] = token;
  for (const auto& t : tokenizer["added_tokens"]) id_to_token[t["id"].get<int32_t>()] = t["content"];
  const auto to_byte = symbol_bytes();
  std::string bytes;
  for (int32_t id : ids) {
    auto it = id_to_token.find(id);
    if (it == id_to_token.end()) continue;  // HF skips ids it does not know
    const std::string& token = it->second;
    for (size_t i = 0; i < token.size();) {
      const auto lead = static_cast<unsigned char>(token[i]);
      const size_t len = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      const std::string symbol = token.substr(i, len);
      auto b = to_byte.find(symbol);
      if (b != to_byte.end()) bytes += static_cast<char>(b->second);
      else bytes += symbol;  // not a byte-level symbol: its own UTF-8 bytes (HF does the same)
      i += len;
    }
  }
  return utf8_lossy(bytes);
}

void copy_shared(const std::string& relative, const std::string& dir, const std::string& name) {
  const std::string src = test::test_data_path(relative);
  ASSERT_FALSE(src.empty());
  fs::copy_file(src, fs::path(dir) / name, fs::copy_options::overwrite_existing);
}

std::string join(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

class TokenizerJsonCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::make_temp_dir("drift-tokjson");
    ASSERT_FALSE(dir_.empty());
    copy_shared("golden/llama-tiny/config.json", dir_, "config.json");
    copy_shared("golden/llama-tiny/model.safetensors", dir_, "model.safetensors");
    copy_shared("models/stories260K/tokenizer.model", dir_, "tokenizer.model");
    tokenizer_ = make_tokenizer_json();
    std::ofstream(dir_ + "/tokenizer.json") << tokenizer_.dump(2);
    std::ofstream(dir_ + "/tokenizer_config.json")
        << json{{"tokenizer_class", "PreTrainedTokenizerFast"}, {"bos_token", kBos}, {"add_bos_token", true}}.dump(2);
  }
  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  // `drift generate` of kText on this checkpoint; `options` come after the prompt.
  std::string generate_command(const std::string& options) const {
    return drift() + " generate --model " + shell_quote(dir_) + " --prompt " + shell_quote(kText) + options;
  }

  json generate_json(const std::string& options = " --max-new-tokens 8") const {
    auto r = run_command(generate_command(options + " --json"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto lines = json_lines(r.out);
    EXPECT_EQ(lines.size(), 1u) << r.out;
    return lines.empty() ? json() : lines[0];
  }

  std::string dir_;
  json tokenizer_;
};

TEST_F(TokenizerJsonCheckpointTest, GenerateEncodesAndDecodesWithTokenizerJson) {
  const json result = generate_json();
  ASSERT_TRUE(result.is_object());
  EXPECT_EQ(result["prompt_ids"].get<std::vector<int32_t>>(), kExpectedPromptIds);
  const auto output = result["output_ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(output.empty());
  for (int32_t id : output) EXPECT_TRUE(id >= 0 && id < kModelVocab) << id;
  EXPECT_EQ(result["text"].get<std::string>(), decode_by_hand(tokenizer_, output)) << join(output);
  // The hand decoder itself: the prompt decodes back to the text, BOS content first.
  EXPECT_EQ(decode_by_hand(tokenizer_, kExpectedPromptIds), std::string(kBos) + kText);
}

// One prompt without --json streams its text through StreamingDecoder as tokens arrive; for the
// same greedy request that text must be exactly the --json "text" (the full decode), with the
// newline the command ends the stream with.
TEST_F(TokenizerJsonCheckpointTest, StreamedTextEqualsJsonText) {
  const std::string request = " --max-new-tokens 48 --temperature 0";
  const json result = generate_json(request);
  ASSERT_TRUE(result.is_object());
  auto streamed = run_command(generate_command(request));
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(streamed.out, result["text"].get<std::string>() + "\n")
      << "output ids " << join(result["output_ids"].get<std::vector<int32_t>>());
}

TEST_F(TokenizerJsonCheckpointTest, TokenizeGivesTheSameIds) {
  auto r = run_command(drift() + " tokenize --model " + shell_quote(dir_) + " --text " + shell_quote(kText));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, join(kExpectedPromptIds) + "\n");
}

TEST_F(TokenizerJsonCheckpointTest, ScoreTokenizesThePromptTheSameWay) {
  const std::string out = dir_ + "/scored.safetensors";
  auto r = run_command(drift() + " score --model " + shell_quote(dir_) + " --prompt " + shell_quote(kText) +
                       " --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tokens " + std::to_string(kExpectedPromptIds.size()) + " ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("vocab 512"), std::string::npos) << r.out;
  // The ids it scored are the tokenizer.json ones, BOS 300 included.
  SafetensorsCheckpoint written(out);
  const TensorInfo& ids = written.get("ids");
  ASSERT_EQ(ids.dtype, DType::I32);
  ASSERT_EQ(ids.shape, std::vector<int64_t>{static_cast<int64_t>(kExpectedPromptIds.size())});
  const auto* data = static_cast<const int32_t*>(ids.data);
  EXPECT_EQ(std::vector<int32_t>(data, data + kExpectedPromptIds.size()), kExpectedPromptIds);
}

TEST_F(TokenizerJsonCheckpointTest, WithoutTokenizerJsonTheSentencePieceModelIsUsed) {
  // The tokenizer_config.json written above belongs to the tokenizer.json (its "<|bos|>" is not a
  // SentencePiece piece), so it goes too; stories260K's own config takes its place.
  fs::remove(fs::path(dir_) / "tokenizer.json");
  copy_shared("models/stories260K/tokenizer_config.json", dir_, "tokenizer_config.json");
  auto expected = run_command(drift() + " tokenize --model " +
                              shell_quote(test::test_data_path("models/stories260K")) + " --json --text " +
                              shell_quote(kText));
  ASSERT_EQ(expected.exit_code, 0) << expected.err;
  const auto sentencepiece_ids = json::parse(expected.out)["ids"].get<std::vector<int32_t>>();
  ASSERT_FALSE(sentencepiece_ids.empty());
  EXPECT_EQ(sentencepiece_ids.front(), 1);  // <s>

  const json result = generate_json();
  ASSERT_TRUE(result.is_object());
  const auto prompt = result["prompt_ids"].get<std::vector<int32_t>>();
  EXPECT_EQ(prompt, sentencepiece_ids);
  EXPECT_NE(prompt, kExpectedPromptIds);
}

}  // namespace
}  // namespace drift
