// `drift plugins list`: the table, load errors, and swapping plugins by config alone (the same
// binary, two configs, two different plugin sets).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "abi_test_util.h"
#include "support/test_data.h"

namespace drift::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The ABI version this header declares, as `plugins list` prints it.
const std::string kAbi = std::to_string(DRIFT_ABI_MAJOR) + "." + std::to_string(DRIFT_ABI_MINOR);

struct CliRun {
  int status = -1;
  std::string output;
};

// Runs `drift <args>` (with `env` assignments in front) and collects its output.
CliRun drift_cli(const std::string& args, const std::string& env = "") {
  CliRun run;
  std::string command = env + drift_exe() + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  char buf[4096];
  for (size_t n; pipe && (n = fread(buf, 1, sizeof buf, pipe)) > 0;) run.output.append(buf, n);
  run.status = pipe ? pclose(pipe) : -1;
  return run;
}

std::string write_config(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(PluginsCli, ListsNameVersionAbiKindsWhereFoundAndPath) {
  CliRun run = drift_cli(std::string("plugins list --plugin ") + DRIFT_ABI_PLUGIN_GOOD);
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("NAME  VERSION  ABI  KINDS"));
  EXPECT_THAT(run.output,
              HasSubstr("good  1.2.3    " + kAbi + "  draft_provider,verification_policy,cache_manager  path      " +
                        std::string(DRIFT_ABI_PLUGIN_GOOD)));
  EXPECT_THAT(run.output,
              ::testing::ContainsRegex("\nfull +builtin +" + kAbi + " +verification_policy +built-in +<built-in>\n"));
  EXPECT_THAT(run.output, Not(HasSubstr("[fallback]")));  // the table carries the reasons
}

// Without a config, every plugin a config could name without a path: here the shipped ones in
// the build beside build/apps/drift (DRIFT_PLUGIN_PATH unset), then the entries of
// DRIFT_PLUGIN_PATH, each saying where it was found.
TEST(PluginsCli, WithoutAConfigListsEveryPluginItCanFind) {
  using ::testing::ContainsRegex;
  CliRun run = drift_cli("plugins list", "env -u DRIFT_PLUGIN_PATH ");
  EXPECT_EQ(run.status, 0) << run.output;
  for (const std::string name : {"eagle3", "ngram", "prefix_cache", "specpv", "suffix_cache"})
    EXPECT_THAT(run.output, ContainsRegex("\n" + name + " +[0-9.]+ +" + kAbi + " +[a-z_,]+ +build tree +" +
                                          plugin_build_dir() + "/libdrift_" + name + "\\.so\n"));

  const std::string dir = make_temp_dir("drift-cli-path");
  std::filesystem::copy_file(DRIFT_ABI_PLUGIN_GOOD, dir + "/libextra.so");
  run = drift_cli("plugins list", "DRIFT_PLUGIN_PATH=" + dir + " ");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output,
              ContainsRegex("\nextra +1\\.2\\.3 +[0-9.]+ +[a-z_,]+ +DRIFT_PLUGIN_PATH +" + dir + "/libextra\\.so\n"));
  EXPECT_THAT(run.output, ContainsRegex("\nngram +[0-9.]+ +[0-9.]+ +draft_provider +build tree "));
  std::filesystem::remove_all(dir);
}

TEST(PluginsCli, LoadErrorsPrintTheReasonAndFail) {
  CliRun run = drift_cli(std::string("plugins list --plugin ") + DRIFT_ABI_PLUGIN_WRONG_MAJOR +
                      " --plugin /nonexistent/libx.so");
  EXPECT_NE(run.status, 0);
  EXPECT_THAT(run.output, HasSubstr("error: " + std::string(DRIFT_ABI_PLUGIN_WRONG_MAJOR) +
                                    ": plugin ABI 2.3 is incompatible with the host's ABI " + kAbi));
  EXPECT_THAT(run.output, HasSubstr("error: plugin library not found: '/nonexistent/libx.so'"));
}

TEST(PluginsCli, SwappingPluginsIsAConfigChange) {
  std::string dir = make_temp_dir("drift-cli");
  std::string a = write_config(dir, "a.toml",
                               "schema_version = 1\n[[plugins]]\nname = \"abi_good\"\n");  // found on DRIFT_PLUGIN_PATH
  std::string b = write_config(dir, "b.toml",
                               "schema_version = 1\n[[plugins]]\nname = \"rec\"\npath = \"" + std::string(DRIFT_ABI_PLUGIN_RECORDING) +
                                   "\"\n[plugins.rec]\ntag = \"x\"\n");
  std::string env = std::string("DRIFT_PLUGIN_PATH=") + DRIFT_ABI_PLUGIN_DIR + " ";
  CliRun with_a = drift_cli("plugins list --config " + a, env);
  CliRun with_b = drift_cli("plugins list --config " + b);

  EXPECT_EQ(with_a.status, 0) << with_a.output;
  EXPECT_THAT(with_a.output, HasSubstr("abi_good  1.2.3"));
  EXPECT_THAT(with_a.output, Not(HasSubstr("recording")));
  EXPECT_EQ(with_b.status, 0) << with_b.output;
  EXPECT_THAT(with_b.output, HasSubstr("rec   1.0.0    " + kAbi));
  EXPECT_THAT(with_b.output, Not(HasSubstr("abi_good")));
}

TEST(PluginsCli, PluginsAreCreatedSeeingTheConfiguredModel) {
  // The service probe's create() loads layer-0 weights through the host and writes the
  // model_info it was given: in `plugins list` as in the engine.
  std::string dir = make_temp_dir("drift-cli-model");
  const std::string model = test_data_path("models/stories260K");
  std::string config =
      write_config(dir, "probe.toml",
                   "schema_version = 1\n[model]\npath = \"" + model + "\"\n[[plugins]]\nname = \"probe\"\npath = \"" +
                       std::string(DRIFT_ABI_PLUGIN_SERVICE_PROBE) + "\"\n[plugins.probe]\nmodel_dir = \"" + model +
                       "\"\nlog_path = \"" + dir + "/probe.log\"\nrelative = \"heads/h1\"\n");
  CliRun run = drift_cli("plugins list --config " + config);
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("probe  1.0.0    " + kAbi + "  draft_provider"));
  std::ifstream log(dir + "/probe.log");
  std::string first_line;
  std::getline(log, first_line);
  EXPECT_EQ(first_line, "model_info bos=1 eos=2 layers=5 block=16 device=" + std::to_string(DRIFT_DEVICE_CPU) +
                            " dtype=" + std::to_string(DRIFT_DTYPE_F32));
  // get_setting_path (ABI 1.2): a relative path setting comes back under the config's folder.
  std::string second_line;
  std::getline(log, second_line);
  EXPECT_EQ(second_line, "setting_path " + dir + "/heads/h1");
}

// The shipped EAGLE-3 config: its head has no embedding of its own, so create() reads the
// target's through host->model_weight, which `plugins list` serves as the engine does.
TEST(PluginsCli, CreatesAHeadThatReadsTheTargetsWeights) {
  CliRun run = drift_cli("plugins list --config " + source_dir() + "/configs/stories260k-eagle3.toml");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, ::testing::ContainsRegex("\neagle3 +[0-9.]+ +" + kAbi + " +draft_provider "));
  EXPECT_THAT(run.output, Not(HasSubstr("error:")));
}

}  // namespace
}  // namespace drift::test
