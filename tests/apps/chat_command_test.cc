// `drift chat` and `drift generate --chat` on SmolLM2-135M-Instruct (fetched by setup): the reply to
// the README's question equals llama.cpp's greedy reply on the same GGUF (tests/data/smollm2,
// recorded by tools/smollm2/record_llama_cpp.sh); turns from stdin equal turns from --prompt; a
// model without a chat template is a clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::drift_in_source;
using test::run_command;
using test::shell_quote;
using ::testing::HasSubstr;

nlohmann::json llama_cpp_chat_golden() {
  std::ifstream in(test::source_dir() + "/tests/data/smollm2/chat_capital.json");
  EXPECT_TRUE(in.good()) << "tests/data/smollm2/chat_capital.json missing";
  return nlohmann::json::parse(in);
}

// The README's first command, after setup: the streamed reply, then a newline.
TEST(ChatCommandTest, ReadmeQuestionMatchesLlamaCpp) {
  test::smollm2_model_dir();
  const auto r =
      run_command(drift_in_source("chat --config configs/smollm2.toml --prompt 'What is the capital of France?'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, llama_cpp_chat_golden()["text"].get<std::string>() + "\n");
}

TEST(ChatCommandTest, GenerateChatEqualsChat) {
  test::smollm2_model_dir();
  const std::string question = " --prompt 'Name a primary color.' --max-new-tokens 24";
  const auto chat = run_command(drift_in_source("chat --config configs/smollm2.toml" + question));
  const auto generate = run_command(drift_in_source("generate --config configs/smollm2.toml --chat" + question));
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  ASSERT_EQ(generate.exit_code, 0) << generate.err;
  EXPECT_EQ(chat.out, generate.out);
  // A system message replaces the template's default one: a different prompt.
  const auto system = run_command(
      drift_in_source("generate --config configs/smollm2.toml --chat --system 'Answer in French.' --json" + question));
  const auto plain = run_command(drift_in_source("generate --config configs/smollm2.toml --chat --json" + question));
  ASSERT_EQ(system.exit_code, 0) << system.err;
  EXPECT_NE(test::json_lines(system.out)[0]["prompt_ids"], test::json_lines(plain.out)[0]["prompt_ids"]);
}

TEST(ChatCommandTest, TurnsFromStdinEqualTurnsFromPrompt) {
  test::smollm2_model_dir();
  const std::string options = "chat --config configs/smollm2.toml --max-new-tokens 16";
  const auto prompted = run_command(drift_in_source(options + " --prompt 'Hello!' --prompt 'What did I just say?'"));
  const auto piped = run_command("printf 'Hello!\\n\\nWhat did I just say?\\n' | (" + drift_in_source(options) + ")");
  ASSERT_EQ(prompted.exit_code, 0) << prompted.err;
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, prompted.out);
  EXPECT_EQ(std::count(prompted.out.begin(), prompted.out.end(), '\n') >= 2, true) << prompted.out;
  // /reset forgets the first turn: the second reply then equals a fresh conversation's.
  const auto reset =
      run_command("printf 'Hello!\\n/reset\\nWhat did I just say?\\n' | (" + drift_in_source(options) + ")");
  const auto fresh = run_command(drift_in_source(options + " --prompt 'What did I just say?'"));
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_THAT(reset.out, ::testing::EndsWith(fresh.out));
}

// drift bench --chat: a text prompt becomes the prompt drift generate --chat makes of it, and
// generates the same tokens.
TEST(ChatCommandTest, BenchChatPromptsEqualGenerateChat) {
  test::smollm2_model_dir();
  const std::string dir = test::make_temp_dir("bench-chat");
  std::ofstream(dir + "/prompts.jsonl") << R"({"turns": ["Name a primary color."]})"
                                        << "\n";
  const auto bench = run_command(drift_in_source(
      "bench --config configs/smollm2.toml --chat --variants off "
      "--max-new-tokens 12 --prompts " +
      shell_quote(dir + "/prompts.jsonl") + " --write-reference " + shell_quote(dir + "/reference.jsonl")));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const auto generate = run_command(drift_in_source(
      "generate --config configs/smollm2.toml --chat --json --max-new-tokens 12 --prompt 'Name a primary color.'"));
  ASSERT_EQ(generate.exit_code, 0) << generate.err;
  std::ifstream in(dir + "/reference.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const auto reference = nlohmann::json::parse(line);
  const auto generated = test::json_lines(generate.out).at(0);
  EXPECT_EQ(reference["prompt_ids"], generated["prompt_ids"]);
  EXPECT_EQ(reference["output_ids"], generated["output_ids"]);
  const std::string stories = test::test_data_path("models/stories260K");
  const auto no_template =
      run_command(drift_in_source("bench --model " + shell_quote(stories) + " --chat --num-prompts 1"));
  EXPECT_NE(no_template.exit_code, 0);
  EXPECT_THAT(no_template.err, HasSubstr("has no chat template"));
}

TEST(ChatCommandTest, BadChatUseIsAClearError) {
  const std::string stories = test::test_data_path("models/stories260K");
  auto r = run_command(drift_in_source("chat --model " + shell_quote(stories) + " --prompt hi"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("has no chat template"));
  EXPECT_THAT(r.err, HasSubstr(stories));
  r = run_command(drift_in_source("generate --model " + shell_quote(stories) + " --prompt hi --system x"));
  EXPECT_THAT(r.err, HasSubstr("--system needs --chat"));
  r = run_command(drift_in_source("generate --model " + shell_quote(stories) + " --chat --prompt-ids 1,2"));
  EXPECT_THAT(r.err, HasSubstr("cannot apply to --prompt-ids"));
}

}  // namespace
}  // namespace drift
