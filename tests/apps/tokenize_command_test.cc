// `drift tokenize` end to end: runs the built binary on the real tokenizer directories and
// checks its output against the goldens.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_data.h"
#include "tests/core/tokenizer/golden_cases.h"

namespace drift {
namespace {

using test::test_data_path;

struct Result {
  int exit_code;
  std::string output;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// Runs `drift tokenize <args>`; stderr is captured too when `with_stderr`.
Result run_tokenize(const std::vector<std::string>& args, bool with_stderr = false) {
  std::string cmd = shell_quote(test::drift_exe()) + " tokenize";
  for (const auto& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  if (with_stderr) cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << cmd;
  if (!pipe) return {-1, ""};
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string join(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  return out;
}

struct Dir {
  std::string golden;
  std::string dir;
};
void PrintTo(const Dir& d, std::ostream* os) { *os << d.golden; }

class TokenizeGolden : public ::testing::TestWithParam<Dir> {};

// Every single-line golden text through --file --json --no-special-tokens: one object per line,
// with LF and with CRLF line endings (the CR is a line ending, not text).
TEST_P(TokenizeGolden, FileJsonMatchesGoldenIds) {
  auto cases = test::load_golden_cases(GetParam().golden);
  for (const std::string line_end : {"\n", "\r\n"}) {
    std::string input = test::make_temp_dir("tokenize-cli") + "/input.txt";
    std::vector<const test::GoldenCase*> used;
    {
      std::ofstream out(input, std::ios::binary);
      for (const auto& c : cases) {
        if (c.text.find_first_of("\r\n") != std::string::npos) continue;  // not one line
        out << c.text << line_end;
        used.push_back(&c);
      }
    }
    ASSERT_GT(used.size(), 150u);
    Result r = run_tokenize({"--model", test_data_path(GetParam().dir), "--file", input, "--json", "--no-special-tokens"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::istringstream lines(r.output);
    std::string line;
    size_t i = 0;
    for (; std::getline(lines, line); ++i) {
      ASSERT_LT(i, used.size()) << "extra output line: " << line;
      EXPECT_EQ(nlohmann::json::parse(line).at("ids").get<std::vector<int32_t>>(), used[i]->ids)
          << used[i]->text << (line_end == "\n" ? " (LF)" : " (CRLF)");
    }
    EXPECT_EQ(i, used.size());
  }
}

// Every multi-line golden text (the ones --file cannot carry) through --text, plain output and
// --json (one input, one object), and --decode back to the golden text.
TEST_P(TokenizeGolden, MultiLineTextAndDecodeMatchGolden) {
  auto cases = test::load_golden_cases(GetParam().golden);
  const std::string dir = test_data_path(GetParam().dir);
  int checked = 0;
  for (const auto& c : cases) {
    if (c.text.find('\n') == std::string::npos) continue;
    ++checked;
    Result r = run_tokenize({"--model", dir, "--text", c.text, "--no-special-tokens", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string expected = nlohmann::json{{"ids", c.ids}}.dump() + "\n";
    EXPECT_EQ(r.output, expected) << c.text;
    if (c.ids.empty()) continue;
    Result d = run_tokenize({"--model", dir, "--decode", join(c.ids)});
    ASSERT_EQ(d.exit_code, 0) << d.output;
    EXPECT_EQ(d.output, c.decoded + "\n");
  }
  EXPECT_GE(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(All, TokenizeGolden,
                         ::testing::Values(Dir{"llama3", "tokenizers/llama3"}, Dir{"qwen3", "tokenizers/qwen3"},
                                           Dir{"llama2", "tokenizers/llama2"}, Dir{"tok512", "models/stories260K"},
                                           Dir{"o200k-style", "tokenizers/o200k-style"}),
                         [](const auto& info) {
                           std::string name = info.param.golden;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(TokenizeCommand, AddsBosAsTheCheckpointSays) {
  Result r = run_tokenize({"--model", test_data_path("models/stories260K"), "--text", "Once upon a time"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "1,403,407,261,378\n");
  Result plain = run_tokenize({"--model", test_data_path("models/stories260K"), "--text", "Once upon a time", "--no-special-tokens", "--json"});
  EXPECT_EQ(plain.output, "{\"ids\":[403,407,261,378]}\n");
  Result decoded = run_tokenize({"--model", test_data_path("models/stories260K"), "--decode", "1,403,407,261,378", "--json"});
  EXPECT_EQ(decoded.output, "{\"text\":\"Once upon a time\"}\n");
}

TEST(TokenizeCommand, ErrorsNameTheBadOption) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  std::string llama3 = test_data_path("tokenizers/llama3");
  std::string empty_dir = test::make_temp_dir("tokenize-empty");
  for (const Case& c : std::vector<Case>{
           {{"--text", "hi"}, "'--model'"},
           {{"--model", llama3, "--frobnicate"}, "'--frobnicate'"},
           {{"--model", llama3, "--text", "a", "--file", "b"}, "'--file'"},
           {{"--model", llama3}, "'--text'"},
           {{"--model", llama3, "--decode", "1,two,3"}, "'two'"},
           {{"--model", llama3, "--decode", "128256"}, "128256"},
           {{"--model", llama3, "--file", empty_dir + "/missing.txt"}, "missing.txt"},
           {{"--model", empty_dir, "--text", "hi"}, "tokenizer.json or tokenizer.model"},
       }) {
    Result r = run_tokenize(c.args, /*with_stderr=*/true);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << r.output;
  }
}

TEST(TokenizeCommand, InvalidUtf8InFileNamesTheLine) {
  std::string input = test::make_temp_dir("tokenize-utf8") + "/input.txt";
  std::ofstream(input, std::ios::binary) << "fine\r\nalso fine\nbroken \xC3(\n";
  Result r = run_tokenize({"--model", test_data_path("tokenizers/llama3"), "--file", input}, /*with_stderr=*/true);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(input + " line 3 is not valid UTF-8"), std::string::npos) << r.output;
}

TEST(TokenizeCommand, HelpExitsZero) {
  Result r = run_tokenize({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--no-special-tokens"), std::string::npos);
}

}  // namespace
}  // namespace drift
