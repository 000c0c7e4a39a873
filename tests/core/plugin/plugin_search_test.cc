// Where a plugin named without a path is found (core/plugin/plugin_search.h): beside the running
// executable (install tree, then build tree), then DRIFT_PLUGIN_PATH, with an error that lists
// every file tried. The executable path and the variable are injected; the folders are real.
#include "core/plugin/plugin_search.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "support/test_data.h"

namespace drift {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void touch(const fs::path& file) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "";
}

PluginEntry named(const std::string& name) { return PluginEntry{name, "", "", false, ""}; }

class PluginSearchTest : public ::testing::Test {
 protected:
  void SetUp() override { root_ = fs::path(test::make_temp_dir("drift-plugin-search")); }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(PluginSearchTest, AMovedInstallTreeFindsThePluginsInstalledBesideIt) {
  const fs::path prefix = root_ / "prefix";
  touch(prefix / "bin/drift");
  touch(prefix / "bin" / DRIFT_PLUGIN_DIR_FROM_BIN / "libdrift_ngram.so");
  fs::rename(prefix, root_ / "moved");
  const ResolvedPlugin found = resolve_plugin(named("ngram"), plugin_search_dirs(root_ / "moved/bin/drift", nullptr));
  EXPECT_EQ(found.path, (root_ / "moved/bin" / DRIFT_PLUGIN_DIR_FROM_BIN / "libdrift_ngram.so").lexically_normal());
  EXPECT_EQ(found.found, "install tree");
}

TEST_F(PluginSearchTest, ABuildTreeFindsItsPluginsFolder) {
  touch(root_ / "build/apps/drift");
  touch(root_ / "build/plugins/libdrift_specpv.so");
  const ResolvedPlugin found = resolve_plugin(named("specpv"), plugin_search_dirs(root_ / "build/apps/drift", nullptr));
  EXPECT_EQ(found.path, root_ / "build/plugins/libdrift_specpv.so");
  EXPECT_EQ(found.found, "build tree");
}

TEST_F(PluginSearchTest, DriftPluginPathIsSearchedInOrderAfterTheShippedFolders) {
  touch(root_ / "build/plugins/libdrift_ngram.so");
  touch(root_ / "a/libngram.so");
  touch(root_ / "a/libmine.so");
  touch(root_ / "b/mine.so");
  touch(root_ / "b/drift_other.so");
  const std::string env = (root_ / "missing").string() + "::" + (root_ / "a").string() + ":" + (root_ / "b").string();
  const auto dirs = plugin_search_dirs(root_ / "build/apps/drift", env.c_str());
  // A stale DRIFT_PLUGIN_PATH never shadows a shipped plugin...
  EXPECT_EQ(resolve_plugin(named("ngram"), dirs).path, root_ / "build/plugins/libdrift_ngram.so");
  // ...and adds the plugins the shipped folders lack, first folder first, any of the four names.
  const ResolvedPlugin mine = resolve_plugin(named("mine"), dirs);
  EXPECT_EQ(mine.path, root_ / "a/libmine.so");
  EXPECT_EQ(mine.found, "DRIFT_PLUGIN_PATH");
  EXPECT_EQ(resolve_plugin(named("other"), dirs).path, root_ / "b/drift_other.so");
  EXPECT_EQ(plugin_names_in(dirs), (std::vector<std::string>{"ngram", "mine", "other"}));
}

TEST_F(PluginSearchTest, NotFoundListsEveryFileTriedInOrder) {
  const std::string env = (root_ / "x").string();
  try {
    resolve_plugin(named("ghost"), plugin_search_dirs(root_ / "bin/drift", env.c_str()));
    FAIL() << "no error";
  } catch (const DriftError& e) {
    const std::string install = (root_ / "bin" / DRIFT_PLUGIN_DIR_FROM_BIN).lexically_normal().string();
    const std::string build = (root_ / "plugins").string();
    const std::string x = (root_ / "x").string();
    EXPECT_EQ(std::string(e.what()), "plugin 'ghost' not found (tried " + install + "/libghost.so, " + install +
                                         "/ghost.so, " + install + "/libdrift_ghost.so, " + install +
                                         "/drift_ghost.so, " + build + "/libghost.so, " + build + "/ghost.so, " +
                                         build + "/libdrift_ghost.so, " + build + "/drift_ghost.so, " + x +
                                         "/libghost.so, " + x + "/ghost.so, " + x + "/libdrift_ghost.so, " + x +
                                         "/drift_ghost.so); give its path, or add its directory to DRIFT_PLUGIN_PATH");
  }
}

TEST_F(PluginSearchTest, WithNothingToSearchTheErrorSaysSo) {
  EXPECT_THROW(
      {
        try {
          resolve_plugin(named("ghost"), plugin_search_dirs(fs::path(), nullptr));
        } catch (const DriftError& e) {
          EXPECT_THAT(e.what(),
                      HasSubstr("tried nothing: no folder beside the executable and DRIFT_PLUGIN_PATH unset"));
          throw;
        }
      },
      DriftError);
}

TEST_F(PluginSearchTest, AnExplicitPathIsTakenAsGivenMadeAbsolute) {
  const ResolvedPlugin given = resolve_plugin(PluginEntry{"x", "rel/../libx.so", "", false, ""}, {});
  EXPECT_EQ(given.path, (fs::current_path() / "libx.so").string());
  EXPECT_EQ(given.found, "path");
}

// This process: the test executable in build/tests finds the build's plugins beside it.
TEST(PluginSearch, TheRunningTestFindsTheBuildsPlugins) {
  const auto dirs = plugin_search_dirs();
  ASSERT_GE(dirs.size(), 2u);
  EXPECT_EQ(dirs[1].dir, fs::path(test::plugin_build_dir()));
  EXPECT_EQ(dirs[1].origin, "build tree");
}

}  // namespace
}  // namespace drift
