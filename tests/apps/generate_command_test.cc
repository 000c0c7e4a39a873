// The `drift` binary end to end: the README's main job, JSON output, batching, sampling flags,
// scoring against the golden logits, and bad input producing clear errors.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/safetensors.h"
#include "support/golden.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::json_lines;
using test::run_command;
using test::shell_quote;

std::string drift() { return shell_quote(test::drift_exe()); }
std::string stories() { return test::test_data_path("models/stories260K"); }

std::string golden_text(size_t case_index) {
  std::ifstream in(stories() + "/golden.json");
  return nlohmann::json::parse(in)["cases"][case_index]["greedy_text"];
}

// `drift generate --model stories260K ARGS --json`: one parsed object per line (a failing run fails
// the test).
std::vector<nlohmann::json> generate_json(const std::string& args) {
  auto r = run_command(drift() + " generate --model " + shell_quote(stories()) + " " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json_lines(r.out);
}

TEST(GenerateCommandTest, DefaultConfigWritesTheGoldenStory) {
  // The README's main job. The golden greedy text was produced by transformers from the same
  // prompt; our streamed text must begin with it (the golden stops at a fixed token count).
  auto r = run_command(test::drift_in_source("generate --config configs/stories260k.toml --prompt 'Once upon a time' "
                                             "--max-new-tokens 200"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string golden = golden_text(1);
  EXPECT_EQ(r.out.substr(0, golden.size()), golden) << r.out;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos);
}

TEST(GenerateCommandTest, GreedyFromBosEqualsGoldenText) {
  auto r = run_command(drift() + " generate --model " + shell_quote(stories()) +
                       " --prompt-ids 1 --max-new-tokens 250 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  const std::string text = lines[0]["text"];
  const std::string golden = golden_text(0);
  EXPECT_EQ(text.substr(0, golden.size()), golden);
}

TEST(GenerateCommandTest, SeveralPromptsRunBatchedWithJsonPerPrompt) {
  auto lines = generate_json(
      "--prompt 'Once upon a time' --prompt 'The little dog was sad because' --prompt-ids 1,317 --max-new-tokens 12");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["prompt_ids"], nlohmann::json({1, 403, 407, 261, 378}));
  for (const auto& l : lines) {
    EXPECT_EQ(l["output_ids"].size(), 12u);
    EXPECT_EQ(l["finish_reason"], "length");
    EXPECT_TRUE(l["text"].is_string());
    EXPECT_GT(l["stats"]["tokens_per_second"].get<double>(), 0.0);
  }
}

TEST(GenerateCommandTest, JsonLinesFollowTheCommandLineOrderOfMixedPrompts) {
  auto lines = generate_json("--prompt-ids 1,317 --prompt 'Once upon a time' --prompt-ids 1,403 --prompt Lily --max-new-tokens 3");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["prompt_ids"], nlohmann::json({1, 317}));
  EXPECT_EQ(lines[1]["prompt_ids"], nlohmann::json({1, 403, 407, 261, 378}));
  EXPECT_EQ(lines[2]["prompt_ids"], nlohmann::json({1, 403}));
  auto lily = run_command(drift() + " tokenize --model " + shell_quote(stories()) + " --text Lily --json");
  ASSERT_EQ(lily.exit_code, 0) << lily.err;
  EXPECT_EQ(lines[3]["prompt_ids"], nlohmann::json::parse(lily.out)["ids"]);
}

TEST(GenerateCommandTest, SeededSamplingIsReproducible) {
  const std::string cmd = drift() + " generate --model " + shell_quote(stories()) +
                          " --prompt Once --max-new-tokens 40 --temperature 0.9 --top-p 0.9 --seed 5 --json";
  auto a = run_command(cmd), b = run_command(cmd);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(json_lines(a.out)[0]["output_ids"], json_lines(b.out)[0]["output_ids"]);
  auto c = run_command(drift() + " generate --model " + shell_quote(stories()) +
                       " --prompt Once --max-new-tokens 40 --temperature 0.9 --top-p 0.9 --seed 6 --json");
  EXPECT_NE(json_lines(a.out)[0]["output_ids"], json_lines(c.out)[0]["output_ids"]);
}

// --n: sample i of a seeded prompt is that prompt alone with --seed + i, one JSON line each; in
// plain text each sample has its header.
TEST(GenerateCommandTest, ParallelSamplesAreTheSeededRunsAlone) {
  const std::string args = " --prompt 'Once upon a time, there was a little' --max-new-tokens 30 --temperature 0.9 ";
  const auto lines = generate_json(args + "--seed 5 --n 3");
  ASSERT_EQ(lines.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i]["sample"], i);
    EXPECT_EQ(lines[i]["output_ids"], generate_json(args + "--seed " + std::to_string(5 + i))[0]["output_ids"]);
  }
  auto plain = run_command(drift() + " generate --model " + shell_quote(stories()) + args + "--seed 5 --n 2");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("[prompt 0 sample 1] finish_reason="), std::string::npos) << plain.out;
  auto bad = run_command(drift() + " generate --model " + shell_quote(stories()) + args + "--n 0");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--n 0: must be in [1, 128]"), std::string::npos) << bad.err;
}

// Logits shaping through the binary: a +100 bias makes token 403 every pick; with EOS (2) biased
// up instead, min_tokens holds it back until five tokens are out, and then it ends the output.
TEST(GenerateCommandTest, LogitBiasAndMinTokensShapeThePicks) {
  auto r = run_command(drift() + " generate --model " + shell_quote(stories()) +
                       " --prompt Once --max-new-tokens 6 --logit-bias 403=100 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_lines(r.out)[0]["output_ids"], nlohmann::json({403, 403, 403, 403, 403, 403}));
  // EOS biased up until min_tokens lets it through: exactly min_tokens tokens, then EOS ends it.
  auto m = run_command(drift() + " generate --model " + shell_quote(stories()) +
                       " --prompt Once --max-new-tokens 20 --logit-bias 2=100 --min-tokens 5 --json");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const auto line = json_lines(m.out)[0];
  EXPECT_EQ(line["finish_reason"], "stop");
  ASSERT_EQ(line["output_ids"].size(), 6u) << line.dump();  // five picks without EOS, then EOS
  EXPECT_EQ(line["output_ids"][5], 2);
}

// The shipped example schema (configs/schemas/person.json), a regex and a choice: each output is
// what its option asked for, and ends with the end-of-sequence token where the format is done.
TEST(GenerateCommandTest, StructuredOutputOptionsConstrainTheOutput) {
  const std::string schema = test::source_dir() + "/configs/schemas/person.json";
  const auto json = generate_json("--prompt Once --max-new-tokens 200 --json-schema " + shell_quote(schema));
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["finish_reason"], "stop") << json[0].dump();
  const auto person = nlohmann::ordered_json::parse(json[0]["text"].get<std::string>());
  EXPECT_TRUE(person.contains("name") && person["name"].is_string()) << person.dump();
  EXPECT_TRUE(person["age"].is_number_integer()) << person.dump();
  EXPECT_TRUE(person["mood"] == "happy" || person["mood"] == "calm" || person["mood"] == "busy") << person.dump();
  const auto choice = generate_json("--prompt Once --temperature 1 --seed 3 --choice yes --choice no --choice maybe");
  const std::string picked = choice[0]["text"];
  EXPECT_TRUE(picked == "yes" || picked == "no" || picked == "maybe") << picked;
  const auto regex = generate_json("--prompt Once --max-new-tokens 100 --regex '[A-Z][a-z]+( [a-z]+){2,4}[.]'");
  EXPECT_EQ(regex[0]["finish_reason"], "stop");
  EXPECT_TRUE(std::regex_match(regex[0]["text"].get<std::string>(), std::regex("[A-Z][a-z]+( [a-z]+){2,4}[.]")))
      << regex[0]["text"];
}

TEST(GenerateCommandTest, BadPromptInABatchFailsAlone) {
  auto r = run_command(drift() + " generate --model " + shell_quote(stories()) +
                       " --prompt-ids 1,403 --prompt-ids 1,9999 --prompt-ids 1,317 --max-new-tokens 5 --json");
  EXPECT_EQ(r.exit_code, 1);
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["finish_reason"], "length");
  EXPECT_EQ(lines[1]["finish_reason"], "error");
  EXPECT_NE(lines[1]["error"].get<std::string>().find("token id 9999 at index 1 is out of range [0, 512)"),
            std::string::npos);
  EXPECT_EQ(lines[2]["finish_reason"], "length");
}

struct BadInvocation {
  const char* args;
  const char* message;
};

TEST(GenerateCommandTest, BadInputGivesAClearError) {
  const std::string model = " --model " + shell_quote(stories());
  const std::vector<BadInvocation> cases = {
      {" generate --model /no/such/dir --prompt x", "--model '/no/such/dir': the model directory does not exist"},
      {" generate --prompt x", "give --config FILE or --model DIR"},
      {" generate --config /no/such.toml --prompt x", "cannot open config file '/no/such.toml'"},
      {" generate --backend gpu --prompt x", "--backend gpu: must be \"cpu\" or \"cuda\""},
      {" generate --prompt-ids 1,x,3", "--prompt-ids '1,x,3': 'x' is not a token id"},
      {" generate --prompt x --temperature -2", "--temperature -2: must be a finite number >= 0"},
      {" generate --prompt x --top-p 0", "--top-p 0: must be in (0, 1]"},
      {" generate --prompt x --top-k -1", "--top-k -1: must be >= 0"},
      {" generate --prompt x --min-p 2", "--min-p 2: must be in [0, 1]"},
      {" generate --prompt x --max-new-tokens 0", "--max-new-tokens 0: must be >= 1"},
      {" generate --prompt x --seed -1", "--seed -1: must be an integer in [0, 18446744073709551615]"},
      {" generate --prompt x --seed 18446744073709551616", "--seed 18446744073709551616: must be an integer in [0, "},
      {" generate --prompt x --seed 7x", "--seed 7x: must be an integer"},
      {" generate --prompt x --max-new-tokens abc", "max-new-tokens"},
      {" generate --prompt x --presence-penalty 3", "--presence-penalty 3: must be in [-2, 2]"},
      {" generate --prompt x --repetition-penalty -1", "--repetition-penalty -1: must be a finite number > 0"},
      {" generate --prompt x --logit-bias 5", "--logit-bias 5: expected TOKEN=BIAS"},
      {" generate --prompt x --logit-bias 5=x", "--logit-bias 5=x: expected TOKEN=BIAS"},
      {" generate --prompt x --logit-bias 5=200", "--logit-bias {5: 200}: biases must be in [-100, 100]"},
      {" generate --prompt x --min-tokens 9 --max-new-tokens 4", "--min-tokens 9: must be in [0, max_new_tokens]"},
      {" generate --prompt x --bogus", "unrecognised option '--bogus'"},
      {" generate --prompt x --json-schema /no/such.json", "cannot open JSON schema file '/no/such.json'"},
      {" generate --prompt x --regex 'a(b'", "--regex a(b: regex at"},
      {" generate --prompt x --regex a --json-object", "--json-object and --regex a: give one structured output"},
      {" generate --prompt x --grammar /no/such.gbnf", "cannot open GBNF grammar file '/no/such.gbnf'"},
  };
  for (const auto& c : cases) {
    const bool needs_model = std::string(c.args).find("--model") == std::string::npos &&
                             std::string(c.args).find("--config") == std::string::npos &&
                             std::string(c.message).find("give --config") == std::string::npos;
    auto r = run_command(drift() + c.args + (needs_model ? model : std::string()));
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\nstderr: " << r.err;
  }
  // Issue 32: a checkpoint's file instead of its folder was reported as a folder that does not exist.
  const std::string file = stories() + "/config.json";
  auto r = run_command(drift() + " generate --model " + shell_quote(file) + " --prompt x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--model '" + file +
                       "': is a file, not a checkpoint folder (give the folder that holds "
                       "config.json and the *.safetensors)"),
            std::string::npos)
      << r.err;
}

TEST(GenerateCommandTest, PromptLongerThanMaxSeqLenIsRefused) {
  std::string ids = "1";
  for (int i = 0; i < 600; ++i) ids += ",400";
  auto r = run_command(drift() + " generate --model " + shell_quote(stories()) + " --prompt-ids " + ids + " --json");
  EXPECT_EQ(r.exit_code, 1);
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0]["error"].get<std::string>().find("prompt has 601 tokens; max_seq_len is 512"), std::string::npos);
}

TEST(ScoreCommandTest, WritesLogitsMatchingTheGolden) {
  const std::string dir = test::test_data_path("golden/qwen3-tiny");
  auto cases = test::load_golden_cases(dir);
  const auto seq = cases[1].sequence();
  std::string ids;
  for (int32_t id : seq) {
    if (!ids.empty()) ids += ',';
    ids += std::to_string(id);
  }
  const std::string out = test::make_temp_dir("drift-score") + "/logits.safetensors";
  auto r = run_command(drift() + " score --model " + shell_quote(dir) + " --ids " + ids + " --out " + shell_quote(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("perplexity"), std::string::npos);
  SafetensorsCheckpoint written(out);
  Tensor logits = to_f32(written.get("logits"));
  ASSERT_EQ(logits.dim(0), static_cast<int64_t>(seq.size()));
  EXPECT_LE(test::max_relative_logit_error(test::first_rows(logits, cases[1].logits.dim(0)), cases[1].logits), 1e-3);
}

TEST(ScoreCommandTest, CorruptCheckpointIsNamed) {
  const std::string dir = test::make_temp_dir("drift-corrupt");
  std::ifstream src(test::test_data_path("golden/llama-tiny/config.json"));
  std::ofstream(dir + "/config.json") << src.rdbuf();
  std::ofstream(dir + "/model.safetensors") << std::string("\x10\0\0\0\0\0\0\0{\"a\":", 13);  // header cut short
  auto r = run_command(drift() + " score --model " + shell_quote(dir) + " --ids 1,2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(dir + "/model.safetensors"), std::string::npos) << r.err;
}

TEST(ScoreCommandTest, ConfigJsonWithMissingFieldIsNamed) {
  const std::string dir = test::make_temp_dir("drift-nofield");
  std::ifstream src(test::test_data_path("golden/llama-tiny/config.json"));
  auto json = nlohmann::json::parse(src);
  json.erase("hidden_size");
  std::ofstream(dir + "/config.json") << json.dump();
  auto r = run_command(drift() + " score --model " + shell_quote(dir) + " --ids 1,2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("hidden_size"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("config.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace drift
