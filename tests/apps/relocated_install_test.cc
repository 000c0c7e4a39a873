// An install tree laid out as `cmake --install` makes it (bin/drift, the plugins in
// bin/DRIFT_PLUGIN_DIR_FROM_BIN), then moved: the binary finds its plugins by name beside itself,
// with DRIFT_PLUGIN_PATH unset and no build folder involved (scripts/package_check.sh does the
// same with the real `cmake --install` and the Debian package).
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

namespace fs = std::filesystem;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

// A copy of the built binary and the ngram plugin in an install-shaped tree under `root`/moved.
fs::path moved_install(const fs::path& root) {
  const fs::path prefix = root / "prefix";
  fs::create_directories(prefix / "bin");
  fs::copy_file(test::drift_exe(), prefix / "bin/drift");
  const fs::path plugins = (prefix / "bin" / DRIFT_PLUGIN_DIR_FROM_BIN).lexically_normal();
  fs::create_directories(plugins);
  fs::copy_file(fs::path(test::plugin_build_dir()) / "libdrift_ngram.so", plugins / "libdrift_ngram.so");
  fs::rename(prefix, root / "moved");
  return root / "moved";
}

TEST(RelocatedInstall, FindsItsPluginsByNameAfterAMove) {
  const fs::path root = test::make_temp_dir("drift-relocated");
  const fs::path prefix = moved_install(root);
  const std::string drift = "env -u DRIFT_PLUGIN_PATH " + test::shell_quote((prefix / "bin/drift").string());
  const std::string plugin = (prefix / "bin" / DRIFT_PLUGIN_DIR_FROM_BIN / "libdrift_ngram.so").lexically_normal();

  test::CommandResult list = test::run_command(drift + " plugins list");
  EXPECT_EQ(list.exit_code, 0) << list.out << list.err;
  EXPECT_THAT(list.out, ContainsRegex("\nngram +[0-9.]+ +[0-9.]+ +draft_provider +install tree +" + plugin + "\n"));
  EXPECT_THAT(list.out, Not(HasSubstr(test::binary_dir())));

  const std::string config = (root / "ngram.toml").string();
  std::ofstream(config)
      << "schema_version = 1\n[model]\npath = \"" << test::test_data_path("models/stories260K")
      << "\"\n[speculative]\nenabled = true\ndraft_provider = \"ngram\"\n[[plugins]]\nname = \"ngram\"\n";
  test::CommandResult run = test::run_command(drift + " generate --config " + test::shell_quote(config) +
                                              " --prompt-ids 1,403,407,403,407 --max-new-tokens 8 --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("loaded from " + plugin));
  EXPECT_THAT(run.out, HasSubstr("\"finish_reason\":\"length\""));
  fs::remove_all(root);
}

}  // namespace
}  // namespace drift
