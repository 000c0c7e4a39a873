// Plugins inside the real engine (stories260K on the CPU backend): a failing or throwing hook
// costs nothing but the plugin (outputs equal the plugin-free engine's, one [fallback] line per
// affected request); the recording plugin sees every hook in the documented order with the right
// arguments across a run with prefix-cache hits, preemption and abort; and its prefix cache
// changes no output.
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "abi_test_util.h"
#include "core/engine.h"
#include "core/plugin/engine_plugins.h"
#include "support/test_data.h"

namespace drift::test {
namespace {

using ::testing::HasSubstr;

EngineConfig base_config(int64_t pages, int64_t block, const char* policy) {
  EngineConfig c;
  c.model.path = test_data_path("models/stories260K");
  c.engine.max_num_tokens = 32;
  c.engine.max_seq_len = 512;
  c.kv_cache.block_size = block;
  c.kv_cache.num_pages = pages;
  c.scheduler.policy = policy;
  return c;
}

PluginEntry entry(const std::string& name, const std::string& path, const std::string& settings = "") {
  PluginEntry e;
  e.name = name;
  e.path = path;
  e.settings_toml = settings;
  return e;
}

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 403, 407, 261, 378},                                 // "Once upon a time"
    {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298},   // the same story, further on
    {1, 317, 269, 274, 287},
    {1, 291, 376, 400, 428, 286, 296, 418},
};

// Runs the prompts (aborting `abort_id` after `abort_after` steps when >= 0); returns outputs.
std::vector<std::vector<int32_t>> run(Engine& engine, int64_t abort_id = -1, int abort_after = 0) {
  std::vector<int64_t> ids;
  for (const auto& p : kPrompts) {
    SamplingParams s;
    s.max_new_tokens = 24;
    ids.push_back(engine.add_request(p, s));
  }
  for (int step = 0; engine.has_unfinished(); ++step) {
    if (step == abort_after && abort_id >= 0) engine.abort(abort_id);
    engine.step();
  }
  std::vector<std::vector<int32_t>> outputs;
  for (int64_t id : ids) outputs.push_back(engine.request(id).output);
  return outputs;
}

std::vector<std::vector<int32_t>> plugin_free_outputs() {
  auto engine = Engine::from_config(base_config(256, 16, "guaranteed_no_evict"));
  return run(*engine);
}

struct FailingCase {
  const char* path;
  const char* settings;
  const char* verification;  // the plugin when it is also a verification policy
};

TEST(EnginePlugins, FailingOrThrowingHookLeavesOutputsUnchanged) {
  const auto expected = plugin_free_outputs();
  const std::vector<FailingCase> cases = {
      {DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_propose\"", "flaky"},
      {DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_choose_kv_view\"", "flaky"},
      {DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_request_start\"\nfail_seq = 2", "flaky"},
      {DRIFT_ABI_PLUGIN_HOOK_THROWS, "fail_hook = \"on_propose\"", "full"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path + std::string(" ") + c.settings);
    LogCapture log;
    EngineConfig config = base_config(256, 16, "guaranteed_no_evict");
    config.plugins.push_back(entry("flaky", c.path, c.settings));
    config.speculative.enabled = true;
    config.speculative.draft_provider = "flaky";
    config.speculative.verification = c.verification;
    config.speculative.max_draft_tokens = 3;
    auto engine = Engine::from_config(config);
    EXPECT_EQ(run(*engine), expected);
    // ONE line for the failure, naming the plugin, the hook and every request it affected;
    // the plugin is then skipped for those requests, so it never fails (or logs) again.
    const auto fallbacks = log.fallbacks();
    ASSERT_EQ(fallbacks.size(), 1u) << ::testing::PrintToString(log.lines());
    EXPECT_THAT(fallbacks[0], HasSubstr("'flaky'"));
    const bool one_request = std::string(c.settings).find("fail_seq") != std::string::npos;
    EXPECT_THAT(fallbacks[0], HasSubstr(one_request ? "request 2 " : "requests 0, 1, 2, 3"));
  }
}

TEST(EnginePlugins, PluginThatFailsToLoadIsSkippedAndTheEngineRuns) {
  const auto expected = plugin_free_outputs();
  LogCapture log;
  EngineConfig config = base_config(256, 16, "guaranteed_no_evict");
  config.plugins.push_back(entry("old", DRIFT_ABI_PLUGIN_WRONG_MAJOR));
  config.plugins.push_back(entry("gone", "/no/such/plugin.so"));
  auto engine = Engine::from_config(config);
  EXPECT_EQ(run(*engine), expected);
  EXPECT_EQ(log.fallbacks().size(), 2u) << ::testing::PrintToString(log.lines());
  EXPECT_THAT(log.matching("/no/such/plugin.so"), ::testing::Not(::testing::IsEmpty()));
}

// ---- the recording plugin across a run with cache hits, preemption and abort ---------------

struct Event {
  std::string hook;
  std::map<std::string, std::string> args;
  std::string raw;
};

std::vector<Event> read_log(const std::string& path) {
  std::vector<Event> events;
  std::ifstream in(path);
  static const std::regex arg(R"((\w+)=(\[[^\]]*\]|\S+))");
  for (std::string line; std::getline(in, line);) {
    Event e;
    e.raw = line;
    e.hook = line.substr(0, line.find(' '));
    for (std::sregex_iterator it(line.begin(), line.end(), arg), end; it != end; ++it) e.args[(*it)[1]] = (*it)[2];
    events.push_back(e);
  }
  return events;
}

std::vector<int32_t> ids(const std::string& list) {
  std::vector<int32_t> out;
  std::string body = list.substr(1, list.size() - 2);
  std::stringstream s(body);
  for (std::string item; std::getline(s, item, ',');) out.push_back(std::stoi(item));
  return out;
}

TEST(EnginePlugins, RecordingPluginSeesEveryHookInOrderWithTheRightArguments) {
  const auto expected = plugin_free_outputs();
  const std::string log_path = make_temp_dir("drift-rec") + "/log.txt";
  // Pages of 4 tokens, 22 pages: enough for any request alone, not for all four, so the
  // max_utilization policy preempts; the recording cache keeps pages, so eviction runs too.
  EngineConfig config = base_config(22, 4, "max_utilization");
  config.plugins.push_back(entry("rec", DRIFT_ABI_PLUGIN_RECORDING, "log_path = \"" + log_path + "\""));
  config.speculative.enabled = true;
  config.speculative.draft_provider = "rec";
  config.speculative.verification = "rec";
  config.speculative.max_draft_tokens = 2;
  auto engine = Engine::from_config(config);
  const int64_t aborted = 3;
  auto outputs = run(*engine, aborted, 6);
  EXPECT_GT(engine->metrics().preemptions, 0) << "the KV budget did not force preemption";
  for (size_t i = 0; i < kPrompts.size(); ++i)
    if (static_cast<int64_t>(i) != aborted) {
      EXPECT_EQ(outputs[i], expected[i]) << "request " << i;
    }
  engine.reset();  // destroy: the log ends with destroy

  const auto events = read_log(log_path);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().hook, "create");
  EXPECT_EQ(events.back().hook, "destroy");

  // Per request: its own event stream, checked against the engine's state machine.
  std::map<int64_t, bool> started;
  std::map<int64_t, std::vector<int32_t>> accepted;
  std::map<int64_t, int64_t> next_block;
  std::map<int64_t, std::string> last_finish;
  int prefix_hits = 0, resumed = 0, evictions = 0;
  for (const Event& e : events) {
    if (e.hook == "evict") ++evictions;
    if (!e.args.count("seq")) continue;
    const int64_t seq = std::stoll(e.args.at("seq"));
    SCOPED_TRACE(e.raw);
    ASSERT_NE(last_finish[seq], "2") << "hook after abort";
    if (e.hook == "prefix_match") {
      EXPECT_FALSE(started[seq]);
      if (e.args.at("pages") != "[]") ++prefix_hits;
    } else if (e.hook == "request_start") {
      EXPECT_FALSE(started[seq]);
      started[seq] = true;
      // Tokens: the prompt, plus (when resumed) everything generated before the preemption.
      std::vector<int32_t> tokens = kPrompts[seq];
      tokens.insert(tokens.end(), accepted[seq].begin(), accepted[seq].end());
      EXPECT_EQ(ids(e.args.at("tokens")), tokens);
      EXPECT_EQ(e.args.at("resumed"), accepted[seq].empty() ? "0" : "1");
      resumed += e.args.at("resumed") == "1";
      next_block[seq] = std::stoll(e.args.at("cached")) / 4;
    } else if (e.hook == "accept") {
      EXPECT_TRUE(started[seq]);
      for (int32_t t : ids(e.args.at("tokens"))) accepted[seq].push_back(t);
    } else if (e.hook == "pages_full") {
      EXPECT_TRUE(started[seq]);
      EXPECT_EQ(std::stoll(e.args.at("first")), next_block[seq]) << "full pages offered out of order";
      next_block[seq] += static_cast<int64_t>(ids(e.args.at("pages")).size());
    } else if (e.hook == "request_finish") {
      EXPECT_TRUE(started[seq]);
      started[seq] = false;
      last_finish[seq] = e.args.at("reason");
    }
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(accepted[i], outputs[i]) << "on_accept tokens differ from the request's output";
    EXPECT_EQ(last_finish[i], static_cast<int64_t>(i) == aborted ? "2" : "1");
  }
  EXPECT_GT(resumed, 0) << "no request was preempted and resumed";
  EXPECT_GT(prefix_hits, 0) << "request 1 shares request 0's first pages";
  EXPECT_GT(evictions, 0) << "the cache was never asked to give pages back";
}

TEST(EnginePlugins, SwappingPluginsIsAConfigChange) {
  const std::string dir = make_temp_dir("drift-swap");
  auto config_text = [&](const std::string& path, const std::string& log) {
    return "schema_version = 1\n[model]\npath = \"" + test_data_path("models/stories260K") +
           "\"\n[speculative]\nenabled = true\ndraft_provider = \"p\"\nmax_draft_tokens = 2\n[[plugins]]\nname = \"p\"\npath = \"" +
           path + "\"\n[plugins.p]\nlog_path = \"" + log + "\"\n";
  };
  std::ofstream(dir + "/a.toml") << config_text(DRIFT_ABI_PLUGIN_RECORDING, dir + "/a.log");
  std::ofstream(dir + "/b.toml") << config_text(DRIFT_ABI_PLUGIN_GOOD, dir + "/b.log");
  std::string outputs[2];
  int index = 0;
  for (const char* name : {"a", "b"}) {
    FILE* pipe = popen((drift_exe() + " generate --config " + dir + "/" + name +
                        ".toml --prompt-ids 1,403 --max-new-tokens 6 --json 2>&1").c_str(), "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) outputs[index].append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << outputs[index];
    ++index;
  }
  EXPECT_THAT(outputs[0], HasSubstr("plugin 'p' 1.0.0 (ABI 1.0, draft_provider,verification_policy,cache_manager) loaded from " DRIFT_ABI_PLUGIN_RECORDING));
  EXPECT_THAT(outputs[1], HasSubstr("loaded from " DRIFT_ABI_PLUGIN_GOOD));
  std::ifstream log(dir + "/a.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("propose step="));
}

}  // namespace
}  // namespace drift::test
