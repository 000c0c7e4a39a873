// Loading and validation: one tiny plugin .so per ABI case (tests/abi/plugins/).
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "abi_test_util.h"
#include "support/test_data.h"

namespace drift::test {
namespace {

using ::testing::HasSubstr;

struct Loaded {
  std::unique_ptr<PluginHost> host = std::make_unique<PluginHost>();
  PluginInfo info;
};

// Loads one entry into a fresh host (with the small model) and returns its info.
Loaded load(const PluginEntry& e) {
  Loaded l;
  l.host->set_model_info(small_model());
  l.host->load_all({e});
  l.info = l.host->plugins().at(0);
  return l;
}

TEST(PluginLoad, GoodPluginLoadsWithIdentityAndNeeds) {
  LogCapture log;
  Loaded l = load(entry("good", DRIFT_ABI_PLUGIN_GOOD));
  EXPECT_TRUE(l.info.enabled) << l.info.error;
  EXPECT_EQ(l.info.plugin_name, "good");
  EXPECT_EQ(l.info.version, "1.2.3");
  EXPECT_EQ(l.info.abi_major, 1u);
  EXPECT_EQ(l.info.abi_minor, static_cast<uint32_t>(DRIFT_ABI_MINOR));
  EXPECT_EQ(kinds_string(l.info.kinds), "draft_provider,verification_policy,cache_manager");
  EXPECT_EQ(l.info.path, std::filesystem::path(DRIFT_ABI_PLUGIN_GOOD).lexically_normal().string());
  EXPECT_EQ(l.host->capture_layers(), std::vector<int32_t>{0});
  EXPECT_TRUE(log.fallbacks().empty());
}

TEST(PluginLoad, WrongMajorIsRefusedLoggingBothVersions) {
  LogCapture log;
  Loaded l = load(entry("wrong_major", DRIFT_ABI_PLUGIN_WRONG_MAJOR));
  EXPECT_FALSE(l.info.enabled);
  ASSERT_EQ(log.fallbacks().size(), 1u);
  const std::string line = log.fallbacks()[0];
  EXPECT_THAT(line, HasSubstr("plugin 'wrong_major' disabled for the engine"));
  EXPECT_THAT(line, HasSubstr("plugin ABI 2.3"));
  EXPECT_THAT(line, HasSubstr("host's ABI " + std::to_string(DRIFT_ABI_MAJOR) + "." + std::to_string(DRIFT_ABI_MINOR)));
  EXPECT_THAT(line, HasSubstr(DRIFT_ABI_PLUGIN_WRONG_MAJOR));
}

TEST(PluginLoad, OlderMinorLoadsAndFieldsBeyondItsSizeReadAsNull) {
  LogCapture log;
  Loaded l = load(entry("older", DRIFT_ABI_PLUGIN_OLDER_MINOR));
  ASSERT_TRUE(l.info.enabled) << l.info.error;
  EXPECT_EQ(l.info.version, "0.9.0");
  int32_t tokens[] = {5};
  l.host->request_start(request(7));
  l.host->accept(7, tokens);
  // on_rewind lies beyond the plugin's struct_size; the plugin aborts if it is ever called.
  l.host->rewind(7, 2);
  l.host->request_finish(7, HookFinishReason::Stop);
  EXPECT_EQ(calls(*l.host, "older", "on_accept", 7), 1);
  EXPECT_EQ(calls(*l.host, "older", "on_rewind"), 0);
  EXPECT_TRUE(log.fallbacks().empty());
}

TEST(PluginLoad, NewerMinorWithLargerStructLoadsAndIgnoresTheTail) {
  LogCapture log;
  Loaded l = load(entry("newer", DRIFT_ABI_PLUGIN_NEWER_MINOR));
  ASSERT_TRUE(l.info.enabled) << l.info.error;
  EXPECT_EQ(l.info.abi_minor, static_cast<uint32_t>(DRIFT_ABI_MINOR) + 1);
  EXPECT_EQ(l.info.kinds, DRIFT_KIND_DRAFT_PROVIDER);  // the unknown kind bit is dropped
  l.host->select("newer", "full");
  DraftRequest request{3, 2, ""};
  std::vector<DraftTree> trees = l.host->propose(StepInfo{1}, std::span(&request, 1));
  EXPECT_EQ(trees.at(0).tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(log.fallbacks().empty());
}

TEST(PluginLoad, MissingRequiredHookIsRefused) {
  LogCapture log;
  Loaded l = load(entry("missing", DRIFT_ABI_PLUGIN_MISSING_REQUIRED_HOOK));
  EXPECT_FALSE(l.info.enabled);
  EXPECT_THAT(l.info.error, HasSubstr("(draft_provider) lacks required hook on_propose"));
  EXPECT_EQ(log.fallbacks().size(), 1u);
}

TEST(PluginLoad, NullOptionalHooksAreSkipped) {
  LogCapture log;
  Loaded l = load(entry("opt", DRIFT_ABI_PLUGIN_OPTIONAL_HOOK_NULL));
  ASSERT_TRUE(l.info.enabled) << l.info.error;
  l.host->select("", "opt");
  int32_t tokens[] = {1, 2};
  l.host->request_start(request(1));
  l.host->accept(1, tokens);
  l.host->rewind(1, 1);
  const int32_t table[] = {0, 1, 2};
  KvViewRequest request{1, table, 2};
  EXPECT_TRUE(l.host->choose_kv_view(StepInfo{1}, std::span(&request, 1)).at(0).full);
  l.host->request_finish(1, HookFinishReason::Stop);
  EXPECT_EQ(l.host->extension("opt", "anything").table, nullptr);
  EXPECT_TRUE(log.fallbacks().empty());
}

TEST(PluginLoad, MissingEntryPointIsAClearError) {
  LogCapture log;
  Loaded l = load(entry("noentry", DRIFT_ABI_PLUGIN_NO_ENTRY_POINT));
  EXPECT_FALSE(l.info.enabled);
  EXPECT_THAT(l.info.error, HasSubstr(DRIFT_ABI_PLUGIN_NO_ENTRY_POINT));
  EXPECT_THAT(l.info.error, HasSubstr("does not export the entry point 'drift_plugin_get'"));
  EXPECT_EQ(log.fallbacks().size(), 1u);
}

TEST(PluginLoad, MissingLibraryNamesThePath) {
  LogCapture log;
  Loaded l = load(entry("ghost", "/nonexistent/dir/libghost.so"));
  EXPECT_FALSE(l.info.enabled);
  EXPECT_EQ(l.info.error, "plugin library not found: '/nonexistent/dir/libghost.so'");
  ASSERT_EQ(log.fallbacks().size(), 1u);
  EXPECT_THAT(log.fallbacks()[0], HasSubstr("/nonexistent/dir/libghost.so"));
}

// Hardening item 11: the reason is dlopen's own, without the unrelated errno text ("Bad file
// descriptor") Boost.DLL appends.
TEST(PluginLoad, ALibraryThatIsNoSharedObjectSaysWhy) {
  const std::string dir = make_temp_dir("drift-notelf");
  const std::string path = dir + "/libnotelf.so";
  std::ofstream(path) << "not an ELF file";
  LogCapture log;
  Loaded l = load(entry("notelf", path));
  EXPECT_FALSE(l.info.enabled);
  EXPECT_EQ(l.info.error, "cannot load plugin library '" + path + "': " + path + ": file too short");
  std::filesystem::remove_all(dir);
}

TEST(PluginLoad, NameIsResolvedOnDriftPluginPath) {
  setenv("DRIFT_PLUGIN_PATH", (std::string("/nonexistent:") + DRIFT_ABI_PLUGIN_DIR).c_str(), 1);
  Loaded found = load(entry("abi_good", ""));
  Loaded missing = load(entry("nope", ""));
  unsetenv("DRIFT_PLUGIN_PATH");
  EXPECT_TRUE(found.info.enabled) << found.info.error;
  EXPECT_EQ(std::filesystem::path(found.info.path).filename(), "libabi_good.so");
  EXPECT_EQ(found.info.found, "DRIFT_PLUGIN_PATH");
  EXPECT_FALSE(missing.info.enabled);
  // Beside the test executable first (build/tests/abi/../lib/drift/plugins, ../plugins), then
  // DRIFT_PLUGIN_PATH in order.
  EXPECT_THAT(missing.info.error, HasSubstr("plugin 'nope' not found (tried "));
  EXPECT_THAT(missing.info.error, HasSubstr(binary_dir() + "/tests/plugins/libnope.so"));
  EXPECT_THAT(missing.info.error, HasSubstr(", /nonexistent/libnope.so, /nonexistent/nope.so"));
  EXPECT_THAT(missing.info.error, HasSubstr(std::string(DRIFT_ABI_PLUGIN_DIR) + "/drift_nope.so); give its path"));
}

TEST(PluginLoad, ShippedPluginsAreFoundByNameBesideTheBuild) {
  Loaded ngram = load(entry("ngram", ""));
  EXPECT_TRUE(ngram.info.enabled) << ngram.info.error;
  EXPECT_EQ(ngram.info.path, plugin_build_dir() + "/libdrift_ngram.so");
}

TEST(PluginLoad, FailingCreateDisablesThePluginForTheEngineOnly) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("bad", DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"create\"\n"),
                 entry("good", DRIFT_ABI_PLUGIN_GOOD)});
  EXPECT_FALSE(info(host.plugins(), "bad").enabled);
  EXPECT_THAT(info(host.plugins(), "bad").error, HasSubstr("create returned DRIFT_ERROR (1)"));
  EXPECT_TRUE(info(host.plugins(), "good").enabled);
  EXPECT_EQ(log.fallbacks().size(), 1u);
  EXPECT_EQ(log.matching("[plugin bad] failing create on purpose").size(), 1u);  // host->log
}

TEST(PluginLoad, CreateThrowingFromCxxIsCaught) {
  LogCapture log;
  Loaded l = load(entry("thrower", DRIFT_ABI_PLUGIN_HOOK_THROWS, "fail_hook = \"create\"\n"));
  EXPECT_FALSE(l.info.enabled);
  EXPECT_THAT(l.info.error, HasSubstr("create threw an exception: hook_throws: create failed on purpose"));
  EXPECT_EQ(log.fallbacks().size(), 1u);
}

TEST(PluginLoad, MalformedSettingsAndDuplicateNamesAreLoadErrors) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("good", DRIFT_ABI_PLUGIN_GOOD, "x = \n"), entry("rec", DRIFT_ABI_PLUGIN_RECORDING),
                 entry("rec", DRIFT_ABI_PLUGIN_RECORDING)});
  std::vector<PluginInfo> plugins = host.plugins();
  ASSERT_EQ(plugins.size(), 3u);
  EXPECT_THAT(plugins[0].error, HasSubstr("settings of plugin 'good'"));
  EXPECT_TRUE(plugins[1].enabled);
  EXPECT_THAT(plugins[2].error, HasSubstr("plugin name 'rec' appears twice"));
  EXPECT_EQ(log.fallbacks().size(), 2u);
}

TEST(PluginLoad, BuiltinFullPolicyIsAlwaysThere) {
  std::vector<PluginInfo> builtins = PluginHost::builtin_plugins();
  ASSERT_EQ(builtins.size(), 1u);
  EXPECT_EQ(builtins[0].name, "full");
  EXPECT_EQ(builtins[0].path, "<built-in>");
  EXPECT_EQ(builtins[0].kinds, DRIFT_KIND_VERIFICATION_POLICY);
  PluginHost host;
  host.load_all({entry("full", "")});  // naming it in [[plugins]] is allowed too
  EXPECT_TRUE(host.plugins().at(0).enabled);
  const int32_t table[] = {0, 1, 2, 3};
  KvViewRequest requests[] = {{1, table, 3}, {2, {}, 0}};
  for (const KvView& view : host.choose_kv_view(StepInfo{1}, requests)) EXPECT_TRUE(view.full);
}

}  // namespace
}  // namespace drift::test
