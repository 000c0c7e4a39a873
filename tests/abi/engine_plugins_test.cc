// Plugins inside the real engine (stories260K on the CPU backend): a failing or throwing hook
// costs nothing but the plugin (outputs equal the plugin-free engine's, one [fallback] line per
// affected request, KV invariants intact); a cache that hoards pages cannot stall the engine;
// the host services tell a plugin the truth about the run (the service probe); and the
// recording plugin sees every hook in the documented order with the right arguments across a
// run with prefix-cache hits, preemption and abort.
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "abi_test_util.h"
#include "core/engine.h"
#include "core/error.h"
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
    {1, 403, 407, 261, 378},                                // "Once upon a time"
    {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298},  // the same story, further on
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
    if (step == 2000) {  // each request needs a few dozen steps: the engine has stalled
      ADD_FAILURE() << "the engine made no progress in 2000 steps";
      break;
    }
    if (step == abort_after && abort_id >= 0) engine.abort(abort_id);
    engine.step();
    engine.kv().check_integrity();  // ref counts, free list, block tables: after every step
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
      // A batch hook failing one sequence through its status: only that request loses the plugin.
      {DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_propose\"\nfail_seq = 2", "flaky"},
      {DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_choose_kv_view\"\nfail_seq = 2", "flaky"},
      {DRIFT_ABI_PLUGIN_HOOK_THROWS, "fail_hook = \"on_propose\"", "full"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.path + std::string(" ") + c.settings);
    LogCapture log;
    EngineConfig config = base_config(256, 16, "guaranteed_no_evict");
    config.plugins.push_back(entry("flaky", c.path, c.settings));
    config.speculative.enabled = true;
    config.speculative.adaptive = false;
    config.speculative.draft_provider = "flaky";
    config.speculative.verification = c.verification;
    config.speculative.max_draft_tokens = 3;
    auto engine = Engine::from_config(config);
    const auto outputs = run(*engine);
    EXPECT_EQ(outputs, expected);
    // ONE line for the failure, naming the plugin, the hook and every request it affected;
    // the plugin is then skipped for those requests, so it never fails (or logs) again.
    const auto fallbacks = log.fallbacks();
    ASSERT_EQ(fallbacks.size(), 1u) << ::testing::PrintToString(log.lines());
    EXPECT_THAT(fallbacks[0], HasSubstr("'flaky'"));
    const bool one_request = std::string(c.settings).find("fail_seq") != std::string::npos;
    EXPECT_THAT(fallbacks[0], HasSubstr(one_request ? "request 2 " : "requests 0, 1, 2, 3"));
    if (one_request && c.path == std::string(DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR)) {
      // The other requests kept the plugin: it saw every token they committed.
      for (int64_t seq : {0, 1, 3})
        EXPECT_EQ(calls(engine->plugins()->host(), "flaky", "on_accept", seq),
                  static_cast<int64_t>(outputs[seq].size()))
            << "request " << seq;
      EXPECT_LT(calls(engine->plugins()->host(), "flaky", "on_accept", 2), static_cast<int64_t>(outputs[2].size()));
    }
  }
}

// Pages of 4 tokens, 22 pages: enough for any request alone, not for all four, so the
// max_utilization policy preempts and a cache that keeps pages is asked to give some back.
EngineConfig tight_config(const char* policy = "max_utilization") { return base_config(22, 4, policy); }

// Pages the KV cache lends out: to running requests (none after a run) and to cache managers.
void expect_no_page_leaked(Engine& engine) {
  const int64_t held = static_cast<int64_t>(engine.plugins()->host().held_pages().size());
  EXPECT_EQ(engine.kv().num_free_pages() + held, engine.kv().num_pages());
}

TEST(EnginePlugins, FailingCacheHookCostsOnlyTheCache) {
  const auto expected = plugin_free_outputs();
  struct Case {
    const char* settings;
    const char* fallback;  // what the one [fallback] line must say
  };
  const std::vector<Case> cases = {
      // Request 1 would reuse request 0's first pages: it computes them instead.
      {"fail_hook = \"on_prefix_match\"\nfail_seq = 1", "hook on_prefix_match"},
      {"fail_hook = \"on_pages_full\"\nfail_seq = 0", "hook on_pages_full"},
      // Eviction has no request to blame: the cache goes for the engine, its pages come back.
      {"fail_hook = \"on_evict\"", "disabled for the engine: hook on_evict"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.settings);
    LogCapture log;
    EngineConfig config = tight_config();
    config.plugins.push_back(entry("cache", DRIFT_ABI_PLUGIN_RECORDING, c.settings));
    auto engine = Engine::from_config(config);
    EXPECT_EQ(run(*engine), expected);
    const auto fallbacks = log.fallbacks();
    ASSERT_EQ(fallbacks.size(), 1u) << ::testing::PrintToString(log.lines());
    EXPECT_THAT(fallbacks[0], HasSubstr(c.fallback));
    expect_no_page_leaked(*engine);
  }
}

TEST(EnginePlugins, HoardingCacheCannotStallTheEngine) {
  const auto expected = plugin_free_outputs();
  for (const char* policy : {"max_utilization", "guaranteed_no_evict"}) {
    SCOPED_TRACE(policy);
    LogCapture log;
    EngineConfig config = tight_config(policy);
    config.plugins.push_back(entry("hoarder", DRIFT_ABI_PLUGIN_RECORDING, "hoard = true"));
    auto engine = Engine::from_config(config);
    EXPECT_EQ(run(*engine), expected);
    // It kept pages until nothing could run without them, then lost them all, in one line.
    const auto fallbacks = log.fallbacks();
    ASSERT_EQ(fallbacks.size(), 1u) << ::testing::PrintToString(log.lines());
    EXPECT_THAT(fallbacks[0], HasSubstr("'hoarder' disabled for the engine: hook on_evict released 0 of"));
    EXPECT_THAT(fallbacks[0], HasSubstr("could not proceed"));
    EXPECT_TRUE(engine->plugins()->host().held_pages().empty());
    EXPECT_EQ(engine->kv().num_free_pages(), engine->kv().num_pages());
  }
}

// ---- the service probe: what plugins read through the host services is true -------------

TEST(EnginePlugins, HostServicesDescribeTheRunTruthfully) {
  const auto expected = plugin_free_outputs();
  const std::string log_path = make_temp_dir("drift-probe") + "/probe.log";
  EngineConfig config = base_config(256, 16, "guaranteed_no_evict");
  config.engine.max_num_tokens = 8;  // prefill in chunks: captured rows of several tokens
  config.plugins.push_back(entry("probe", DRIFT_ABI_PLUGIN_SERVICE_PROBE,
                                 "model_dir = \"" + config.model.path + "\"\nlog_path = \"" + log_path + "\""));
  config.speculative.enabled = true;
  config.speculative.adaptive = false;
  config.speculative.draft_provider = "probe";
  config.speculative.max_draft_tokens = 2;
  LogCapture log;
  auto engine = Engine::from_config(config);
  EXPECT_EQ(run(*engine), expected);
  EXPECT_TRUE(log.fallbacks().empty()) << ::testing::PrintToString(log.lines());

  std::ifstream in(log_path);
  std::map<std::string, int> passed;
  std::string model_info;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model_info", 0) == 0) model_info = line;
    EXPECT_THAT(line, ::testing::Not(HasSubstr("FAIL")));
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(check (\w+) seq=\d+ ok)"))) passed[m[1]]++;
  }
  for (const char* check : {"layer0", "lm_head", "attention", "page_info", "not_found", "views", "model_weight"})
    EXPECT_GT(passed[check], 0) << check;
  // Plugins see the special tokens the engine stops on (the tokenizer's).
  const SpecialTokens special = engine->tokenizer()->special_tokens();
  EXPECT_EQ(model_info, "model_info bos=" + std::to_string(special.bos_id.value_or(-1)) +
                            " eos=" + std::to_string(special.eos_ids.at(0)) + " layers=5 block=16 device=" +
                            std::to_string(DRIFT_DEVICE_CPU) + " dtype=" + std::to_string(DRIFT_DTYPE_F32));
}

// Hardening item 9: a configured plugin that cannot be loaded stops the engine with the reason...
TEST(EnginePlugins, RequiredPluginThatFailsToLoadStopsTheEngine) {
  for (const auto& [path, reason] :
       {std::pair<std::string, std::string>{DRIFT_ABI_PLUGIN_WRONG_MAJOR, "(major 2 != 1)"},
        {"/no/such/plugin.so", "plugin library not found: '/no/such/plugin.so'"}}) {
    EngineConfig config = base_config(256, 16, "guaranteed_no_evict");
    config.plugins.push_back(entry("p", path));
    try {
      Engine::from_config(config);
      ADD_FAILURE() << "the engine started without its configured plugin " << path;
    } catch (const DriftError& e) {
      EXPECT_THAT(e.what(), HasSubstr("plugin 'p' could not be loaded: "));
      EXPECT_THAT(e.what(), HasSubstr(reason));
      EXPECT_THAT(e.what(), HasSubstr("optional = true"));
    }
  }
}

// ...unless its entry says optional = true: then it is skipped with one [fallback] line each and the
// engine runs exactly as without it.
TEST(EnginePlugins, OptionalPluginThatFailsToLoadIsSkippedAndTheEngineRuns) {
  const auto expected = plugin_free_outputs();
  LogCapture log;
  EngineConfig config = base_config(256, 16, "guaranteed_no_evict");
  config.plugins.push_back(entry("old", DRIFT_ABI_PLUGIN_WRONG_MAJOR));
  config.plugins.push_back(entry("gone", "/no/such/plugin.so"));
  for (PluginEntry& e : config.plugins) e.optional = true;
  auto engine = Engine::from_config(config);
  EXPECT_EQ(run(*engine), expected);
  EXPECT_EQ(log.fallbacks().size(), 2u) << ::testing::PrintToString(log.lines());
  EXPECT_THAT(log.matching("/no/such/plugin.so"), ::testing::Not(::testing::IsEmpty()));
}

// The same through the binary: exit code 1 and the reason on stderr, nothing on stdout.
TEST(EnginePlugins, DriftRefusesToRunWithoutARequiredPlugin) {
  const std::string dir = make_temp_dir("drift-required");
  std::ofstream(dir + "/c.toml") << "schema_version = 1\n[model]\npath = \"" + test_data_path("models/stories260K") +
                                        "\"\n[[plugins]]\nname = \"p\"\npath = \"/no/such/plugin.so\"\n";
  FILE* pipe = popen((drift_exe() + " generate --config " + dir + "/c.toml --prompt-ids 1,403 2>&1").c_str(), "r");
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) output.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(pclose(pipe)), 1) << output;
  EXPECT_THAT(output,
              HasSubstr("error: plugin 'p' could not be loaded: plugin library not found: '/no/such/plugin.so'"));
  std::filesystem::remove_all(dir);
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

// "propose step=3 0:2 1:2" -> {{0, 2}, {1, 2}}: the sequences of a batch hook and a number each.
std::vector<std::pair<int64_t, int64_t>> batch_entries(const std::string& line) {
  std::vector<std::pair<int64_t, int64_t>> out;
  static const std::regex entry(R"( (\d+):(\d+))");
  for (std::sregex_iterator it(line.begin(), line.end(), entry), end; it != end; ++it)
    out.emplace_back(std::stoll((*it)[1]), std::stoll((*it)[2]));
  return out;
}

// "target_forward step=3 0:2@5/8 1:1@9/11" -> {seq, rows, first position, tokens, readable}.
struct ForwardEntry {
  int64_t seq, rows, first, tokens;
  bool readable;
};
std::vector<ForwardEntry> forward_entries(const std::string& line) {
  std::vector<ForwardEntry> out;
  static const std::regex entry(R"( (\d+):(\d+)@(\d+)/(\d+)(!?))");
  for (std::sregex_iterator it(line.begin(), line.end(), entry), end; it != end; ++it)
    out.push_back({std::stoll((*it)[1]), std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4]),
                   (*it)[5].length() == 0});
  return out;
}

TEST(EnginePlugins, RecordingPluginSeesEveryHookInOrderWithTheRightArguments) {
  const auto expected = plugin_free_outputs();
  const std::string log_path = make_temp_dir("drift-rec") + "/log.txt";
  // The recording cache keeps pages, so eviction runs too.
  EngineConfig config = tight_config();
  config.plugins.push_back(entry("rec", DRIFT_ABI_PLUGIN_RECORDING, "log_path = \"" + log_path + "\""));
  config.speculative.enabled = true;
  config.speculative.adaptive = false;
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
  EXPECT_EQ(events[1].hook, "declare_needs");
  EXPECT_EQ(events.back().hook, "destroy");

  // Per request: its own event stream, checked against the engine's state machine. Per step:
  // choose_kv_view (sequences verifying a draft proposed at the end of the last step: some of
  // those proposed for, unless preempted) -> forward -> accept (each of them, >= 1 token) ->
  // rewind (only right after its accept) -> pages_full -> propose (decode sequences, budget
  // max_draft_tokens) for the next step, right after target_forward (every sequence of the
  // forward still running: its rows follow on from the last ones, through the position before
  // its last committed token exactly when the step committed tokens for it).
  std::map<int64_t, bool> started;
  std::map<int64_t, std::vector<int32_t>> accepted;
  std::map<int64_t, int64_t> next_block;
  std::map<int64_t, std::vector<std::string>> finishes;
  std::map<int64_t, int> resumed_starts;
  std::vector<int64_t> proposed;
  std::set<int64_t> awaiting_accept;
  std::map<int64_t, std::string> last_hook;
  std::map<int64_t, int64_t> next_position, prompt_length, committed_since;
  std::string last_forward_step = "none";
  int prefix_hits = 0, evictions = 0, proposals = 0, forwards = 0;
  for (const Event& e : events) {
    SCOPED_TRACE(e.raw);
    if (e.hook == "evict") ++evictions;
    if (e.hook == "target_forward") {
      for (const ForwardEntry& f : forward_entries(e.raw)) {
        EXPECT_TRUE(started[f.seq]) << "target_forward for a request that is not running";
        EXPECT_TRUE(f.readable) << "its hidden-state rows were not readable";
        EXPECT_EQ(f.first, next_position[f.seq]) << "rows must follow on from the last forward's";
        EXPECT_EQ(f.tokens, prompt_length[f.seq] + static_cast<int64_t>(accepted[f.seq].size()));
        EXPECT_GT(f.rows, 0);
        EXPECT_LE(f.first + f.rows, f.tokens - 1) << "every row has a next token";
        EXPECT_EQ(f.first + f.rows == f.tokens - 1, committed_since[f.seq] > 0)
            << "rows reach the last committed token's predecessor exactly when tokens were committed";
        next_position[f.seq] = f.first + f.rows;
        committed_since[f.seq] = 0;
      }
      last_forward_step = e.args.at("step");
      ++forwards;
      continue;
    }
    if (e.hook == "propose") {
      EXPECT_EQ(e.args.at("step"), last_forward_step) << "on_propose follows the same step's on_target_forward";
      EXPECT_TRUE(awaiting_accept.empty()) << "a sequence that verified a draft got no accept in its step";
      proposed.clear();
      for (auto [seq, budget] : batch_entries(e.raw)) {
        EXPECT_TRUE(started[seq]);
        EXPECT_FALSE(accepted[seq].empty()) << "only decode sequences get drafts";
        EXPECT_EQ(budget, 2);
        proposed.push_back(seq);
      }
      ++proposals;
      continue;
    }
    if (e.hook == "choose_kv_view") {
      for (auto [seq, max_pages] : batch_entries(e.raw)) {
        EXPECT_NE(std::find(proposed.begin(), proposed.end(), seq), proposed.end()) << "viewed without a draft";
        awaiting_accept.insert(seq);
      }
      continue;
    }
    if (!e.args.count("seq")) continue;
    const int64_t seq = std::stoll(e.args.at("seq"));
    ASSERT_TRUE(finishes[seq].empty() || finishes[seq].back() == "3") << "hook after the request ended";
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
      EXPECT_EQ(e.args.at("prompt"), std::to_string(kPrompts[seq].size()));
      EXPECT_EQ(e.args.at("max_new"), "24");
      EXPECT_EQ(e.args.at("resumed"), finishes[seq].empty() ? "0" : "1");
      resumed_starts[seq] += e.args.at("resumed") == "1";
      next_block[seq] = std::stoll(e.args.at("cached")) / 4;
      next_position[seq] = std::stoll(e.args.at("cached"));  // cached positions never run
      prompt_length[seq] = static_cast<int64_t>(kPrompts[seq].size());
      committed_since[seq] = 0;
      EXPECT_EQ(e.args.at("drafts"), "1") << "the recorder drafts for every request here";
    } else if (e.hook == "accept") {
      EXPECT_TRUE(started[seq]);
      const auto tokens = ids(e.args.at("tokens"));
      EXPECT_GE(tokens.size(), 1u);
      accepted[seq].insert(accepted[seq].end(), tokens.begin(), tokens.end());
      committed_since[seq] += static_cast<int64_t>(tokens.size());
      awaiting_accept.erase(seq);
    } else if (e.hook == "rewind") {
      EXPECT_EQ(last_hook[seq], "accept") << "on_rewind comes right after the step's on_accept";
      EXPECT_GT(std::stoll(e.args.at("n")), 0);
    } else if (e.hook == "pages_full") {
      EXPECT_TRUE(started[seq]);
      const int64_t first = std::stoll(e.args.at("first"));
      EXPECT_EQ(first, next_block[seq]) << "full pages offered out of order";
      // The pages are the sequence's own, at those block-table positions, and hold KV.
      const auto pages = ids(e.args.at("pages"));
      const auto table = ids(e.args.at("table"));
      ASSERT_LE(first + static_cast<int64_t>(pages.size()), static_cast<int64_t>(table.size()));
      EXPECT_EQ(pages, std::vector<int32_t>(table.begin() + first, table.begin() + first + pages.size()));
      EXPECT_GE(std::stoll(e.args.at("table_tokens")), (first + static_cast<int64_t>(pages.size())) * 4);
      next_block[seq] += static_cast<int64_t>(pages.size());
    } else if (e.hook == "request_finish") {
      EXPECT_TRUE(started[seq]);
      started[seq] = false;
      finishes[seq].push_back(e.args.at("reason"));
      awaiting_accept.erase(seq);
    }
    last_hook[seq] = e.hook;
  }
  int preempted = 0;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(accepted[i], outputs[i]) << "on_accept tokens differ from the request's output";
    // Every finish but the last says "preempted", and each was followed by a resumed start.
    ASSERT_FALSE(finishes[i].empty());
    EXPECT_EQ(finishes[i].back(), static_cast<int64_t>(i) == aborted ? "2" : "1");
    const auto n_preempted = std::count(finishes[i].begin(), finishes[i].end() - 1, "3");
    EXPECT_EQ(n_preempted, static_cast<int64_t>(finishes[i].size()) - 1);
    EXPECT_EQ(resumed_starts[i], n_preempted);
    preempted += static_cast<int>(n_preempted);
  }
  EXPECT_GT(preempted, 0) << "no request was preempted and resumed";
  EXPECT_GT(proposals, 0);
  EXPECT_GT(forwards, proposals) << "prefill-only steps have a target_forward too";
  EXPECT_GT(prefix_hits, 0) << "request 1 shares request 0's first pages";
  EXPECT_GT(evictions, 0) << "the cache was never asked to give pages back";
}

TEST(EnginePlugins, SwappingPluginsIsAConfigChange) {
  const std::string dir = make_temp_dir("drift-swap");
  auto config_text = [&](const std::string& path, const std::string& log) {
    return "schema_version = 1\n[model]\npath = \"" + test_data_path("models/stories260K") +
           "\"\n[speculative]\nenabled = true\ndraft_provider = \"p\"\nmax_draft_tokens = 2\n[[plugins]]\nname = "
           "\"p\"\npath = \"" +
           path + "\"\n[plugins.p]\nlog_path = \"" + log + "\"\n";
  };
  std::ofstream(dir + "/a.toml") << config_text(DRIFT_ABI_PLUGIN_RECORDING, dir + "/a.log");
  std::ofstream(dir + "/b.toml") << config_text(DRIFT_ABI_PLUGIN_GOOD, dir + "/b.log");
  std::string outputs[2];
  int index = 0;
  for (const char* name : {"a", "b"}) {
    FILE* pipe = popen((drift_exe() + " generate --config " + dir + "/" + name +
                        ".toml --prompt-ids 1,403 --max-new-tokens 6 --json 2>&1")
                           .c_str(),
                       "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) outputs[index].append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << outputs[index];
    ++index;
  }
  EXPECT_THAT(
      outputs[0],
      HasSubstr("plugin 'p' 1.0.0 (ABI " + std::to_string(DRIFT_ABI_MAJOR) + "." + std::to_string(DRIFT_ABI_MINOR) +
                ", draft_provider,verification_policy,cache_manager) loaded from " DRIFT_ABI_PLUGIN_RECORDING));
  EXPECT_THAT(outputs[1], HasSubstr("loaded from " DRIFT_ABI_PLUGIN_GOOD));
  std::ifstream log(dir + "/a.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("propose step="));
}

}  // namespace
}  // namespace drift::test
