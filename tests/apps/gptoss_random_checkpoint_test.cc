// tools/gptoss/random_checkpoint.py (issue 34 part 7: the gpt-oss-20b-shape checkpoint maker),
// run at a small shape: the engine loads what it writes -- sharded safetensors with MXFP4 experts
// and the published config -- as the GPT-OSS model it describes, every stored tensor read and
// counted, and drift generate runs on it.
#include <filesystem>

#include <gtest/gtest.h>

#include "core/model/model_config.h"
#include "core/model/model_layout.h"
#include "core/safetensors.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::run_command;
using test::shell_quote;

std::string make_checkpoint(const std::string& extra) {
  const std::string dir = test::make_temp_dir("gptoss-random");
  const std::string command = "python3 " + shell_quote(test::source_dir() + "/tools/gptoss/random_checkpoint.py") +
                              " " + shell_quote(dir) +
                              " --layers 3 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 4 "
                              "--experts-per-token 2 --intermediate 96 --vocab 512 --window 16 " +
                              extra;
  const auto r = run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return dir;
}

// Logical parameters: bf16 values, and two MXFP4 values a block byte (scales are not parameters).
int64_t stored_parameters(const SafetensorsCheckpoint& checkpoint) {
  int64_t n = 0;
  for (const std::string& name : checkpoint.names()) {
    const TensorInfo& info = checkpoint.get(name);
    if (name.ends_with("_scales")) continue;
    n += name.ends_with("_blocks") ? static_cast<int64_t>(info.nbytes) * 2 : static_cast<int64_t>(info.nbytes) / 2;
  }
  return n;
}

TEST(GptOssRandomCheckpoint, LoadsAsTheModelItDescribesAndGenerates) {
  const std::string dir = make_checkpoint("--shard-gb 0.0002");  // several shards and an index
  const ModelConfig config = load_model_config(dir);
  EXPECT_EQ(config.arch, Architecture::GptOss);
  EXPECT_TRUE(config.moe.mxfp4);
  ASSERT_EQ(config.layers.size(), 3u);
  EXPECT_EQ(config.layers[0].attention_window, 16);
  EXPECT_EQ(config.layers[1].attention_window, 0);
  EXPECT_EQ(config.moe.num_experts, 4);
  EXPECT_EQ(config.moe.experts_per_token, 2);
  const SafetensorsCheckpoint checkpoint(dir);
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.safetensors.index.json"));
  EXPECT_EQ(ModelLayout{config}.parameter_count(), stored_parameters(checkpoint));
  const auto r = run_command(shell_quote(test::drift_exe()) + " generate --model " + shell_quote(dir) +
                             " --prompt-ids 5,6,7,8 --max-new-tokens 6 --ignore-eos");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("1 prompt(s), 6 tokens"), std::string::npos) << r.out << r.err;
}

TEST(GptOssRandomCheckpoint, SizesMustHoldWholeMxfp4Blocks) {
  const std::string dir = test::make_temp_dir("gptoss-random-bad");
  const auto r = run_command("python3 " + shell_quote(test::source_dir() + "/tools/gptoss/random_checkpoint.py") + " " +
                             shell_quote(dir) + " --hidden 70");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("multiples of 32"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace drift
