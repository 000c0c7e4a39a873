// `drift --version`: the project version, the commit, the plugin ABI and the CUDA build.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "drift/plugin.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using ::testing::MatchesRegex;

TEST(VersionCommand, NamesVersionCommitAbiAndCuda) {
  test::CommandResult r = test::run_command(test::shell_quote(test::drift_exe()) + " --version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string abi = std::to_string(DRIFT_ABI_MAJOR) + "\\." + std::to_string(DRIFT_ABI_MINOR);
#if defined(DRIFT_WITH_CUDA)
  const std::string cuda = "CUDA: yes \\(architectures [0-9a-z,]+\\)";
#else
  const std::string cuda = "CUDA: no";
#endif
  EXPECT_THAT(r.out,
              MatchesRegex("drift " DRIFT_PROJECT_VERSION "\ncommit: ([0-9a-f]{12}(-dirty)?|unknown)\nplugin ABI: " +
                           abi + "\n" + cuda + "\n"));
  EXPECT_EQ(test::run_command(test::shell_quote(test::drift_exe()) + " -V").out, r.out);
}

}  // namespace
}  // namespace drift
