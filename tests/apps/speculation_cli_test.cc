// Speculation through the `drift` binary: the ngram config (as shipped, and with --adaptive off)
// generates exactly what the plain config does, `--speculative off` turns drafts off for the run,
// --json reports the speculation statistics (draft = accepted + rewound; the per-step commits add up
// to the output), --stop cuts the text, a bad --speculative value names itself, and `drift bench`
// compares the variants of a config side by side in one process (and builds the named
// long-context scenarios).
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::drift_in_source;
using test::json_lines;
using test::run_command;
using test::shell_quote;

const char* kPrompts =
    " --prompt 'Once upon a time' --prompt 'Tom and Lily went to the park' --max-new-tokens 64 --json";

TEST(SpeculationCliTest, NgramConfigIsLosslessAndReportsItsStatistics) {
  const auto plain = run_command(drift_in_source("generate --config configs/stories260k.toml") + kPrompts);
  const auto shipped = run_command(drift_in_source("generate --config configs/stories260k-ngram.toml") + kPrompts);
  // --adaptive off: max_draft_tokens every step, so whether it drafts never depends on the step
  // times adaptive speculation measures (on the CPU, where stories260K's speculation does not pay,
  // it may keep a short run at 0 but for a probe the drafter cannot fill).
  const auto ngram =
      run_command(drift_in_source("generate --config configs/stories260k-ngram.toml --adaptive off") + kPrompts);
  const auto off =
      run_command(drift_in_source("generate --config configs/stories260k-ngram.toml --speculative off") + kPrompts);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  ASSERT_EQ(ngram.exit_code, 0) << ngram.err;
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const auto p = json_lines(plain.out), n = json_lines(ngram.out), o = json_lines(off.out), a = json_lines(shipped.out);
  ASSERT_EQ(n.size(), 2u);
  ASSERT_EQ(a.size(), 2u);
  int64_t drafted = 0;
  for (size_t i = 0; i < n.size(); ++i) {
    EXPECT_EQ(n[i]["output_ids"], p[i]["output_ids"]) << "prompt " << i;
    EXPECT_EQ(n[i]["text"], p[i]["text"]);
    EXPECT_EQ(a[i]["output_ids"], p[i]["output_ids"]) << "prompt " << i << ", the shipped (adaptive) config";
    EXPECT_EQ(o[i]["output_ids"], p[i]["output_ids"]);
    const auto& s = n[i]["stats"]["speculation"];
    EXPECT_EQ(s["draft_tokens"].get<int64_t>(),
              s["accepted_tokens"].get<int64_t>() + s["rewound_tokens"].get<int64_t>());
    int64_t committed = 0;
    for (int64_t k : s["committed_per_step"]) committed += k;
    EXPECT_EQ(committed, n[i]["stats"]["output_tokens"].get<int64_t>());
    drafted += s["draft_tokens"].get<int64_t>();
    EXPECT_EQ(o[i]["stats"]["speculation"]["draft_tokens"], 0) << "--speculative off";
  }
  EXPECT_GT(drafted, 0);
  EXPECT_THAT(ngram.err, ::testing::HasSubstr("[stats] speculation:"));
}

// The EAGLE-3 config (stories260K and its trained head, plugins/eagle3) through the binary: the
// plain config's tokens and text, with real drafts accepted; the head's memory declared, budgeted
// in the startup log and reported (the host's count of what it held, within what it declared).
TEST(SpeculationCliTest, Eagle3ConfigIsLosslessAndDraftsWell) {
  const auto plain = run_command(drift_in_source("generate --config configs/stories260k.toml") + kPrompts);
  const auto eagle3 = run_command(drift_in_source("generate --config configs/stories260k-eagle3.toml") + kPrompts);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(eagle3.exit_code, 0) << eagle3.err;
  nlohmann::json summary;
  const auto p = json_lines(plain.out), e = json_lines(eagle3.out, &summary);
  ASSERT_EQ(e.size(), 2u);
  for (size_t i = 0; i < e.size(); ++i) {
    EXPECT_EQ(e[i]["output_ids"], p[i]["output_ids"]) << "prompt " << i;
    EXPECT_EQ(e[i]["text"], p[i]["text"]);
    EXPECT_GT(e[i]["stats"]["speculation"]["acceptance_length"].get<double>(), 2.0) << "prompt " << i;
  }
  EXPECT_THAT(eagle3.err, ::testing::HasSubstr("plugin 'eagle3' 1.0.0"));
  EXPECT_THAT(eagle3.err, ::testing::HasSubstr("plugin 'eagle3' will hold"));
  EXPECT_THAT(eagle3.err, ::testing::HasSubstr("the plugins' 256 bytes/token"));  // 2 x 8 kv dims x 4 bytes
  const auto& memory = summary["plugin_memory"]["eagle3"];
  EXPECT_GT(memory["peak_bytes"].get<int64_t>(), 0) << summary.dump();
  EXPECT_LE(memory["peak_bytes"].get<int64_t>(), memory["declared_bytes"].get<int64_t>()) << summary.dump();
  // The plan is what the head holds, not a loose bound: within 1% (d2t is freed before the rest).
  EXPECT_GT(memory["peak_bytes"].get<int64_t>(), memory["declared_bytes"].get<int64_t>() * 99 / 100) << summary.dump();
}

// SuffixDecoding through the binary: the plain config's tokens; the plugin's own figures (update
// and speculate costs, where drafts came from) in drift bench's JSON.
TEST(SpeculationCliTest, SuffixConfigIsLosslessAndReportsItsOwnFigures) {
  const auto plain = run_command(drift_in_source("generate --config configs/stories260k.toml") + kPrompts);
  const auto suffix = run_command(drift_in_source("generate --config configs/stories260k-suffix.toml") + kPrompts);
  ASSERT_EQ(suffix.exit_code, 0) << suffix.err;
  nlohmann::json summary;
  const auto p = json_lines(plain.out), s = json_lines(suffix.out, &summary);
  ASSERT_EQ(s.size(), 2u);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i]["output_ids"], p[i]["output_ids"]) << "prompt " << i;
  // drift generate --json's summary: which provider drafted, and the plugin's own figures.
  EXPECT_GT(summary["drafts_by_provider"]["suffix_cache"].get<int64_t>(), 0) << summary.dump();
  EXPECT_GT(summary["plugin_stats"]["suffix_cache"]["proposals"].get<int64_t>(), 0) << summary.dump();
  const std::string json_path = test::make_temp_dir("bench-suffix") + "/bench.json";
  const auto bench =
      run_command(drift_in_source("bench --config configs/stories260k-suffix.toml --num-prompts 6 "
                                  "--max-new-tokens 32 --json " +
                                  shell_quote(json_path)));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  std::ifstream file(json_path);
  const nlohmann::json j = nlohmann::json::parse(file);
  const auto& stats = j["results"][1]["plugin_stats"]["suffix_cache"];
  EXPECT_GT(stats["proposals"].get<int64_t>(), 0);
  EXPECT_GT(stats["updated_tokens"].get<int64_t>(), 0);
  EXPECT_TRUE(stats.contains("speculate_us_per_proposal") && stats.contains("drafts_from_global_tree"));
  EXPECT_GT(j["results"][1]["drafts_by_provider"]["suffix_cache"].get<int64_t>(), 0);
}

// SpecPV through the binary: partial views on long outputs (the summary counts them, the plugin
// reports its refreshes); --full-verification turns them off for the request, and then the output
// is exactly the eagle3 config's (exact speculation), which a lossy policy need not match.
TEST(SpeculationCliTest, SpecPVConfigVerifiesPartiallyUnlessARequestAsksForFull) {
  const std::string prompts =
      " --prompt 'Once upon a time' --prompt 'Tom and Lily went to the park' "
      "--max-new-tokens 300 --ignore-eos --json";
  const auto exact = run_command(drift_in_source("generate --config configs/stories260k-eagle3.toml") + prompts);
  const auto partial = run_command(drift_in_source("generate --config configs/stories260k-specpv.toml") + prompts);
  const auto full =
      run_command(drift_in_source("generate --config configs/stories260k-specpv.toml --full-verification") + prompts);
  ASSERT_EQ(partial.exit_code, 0) << partial.err;
  ASSERT_EQ(full.exit_code, 0) << full.err;
  nlohmann::json partial_summary, full_summary;
  const auto e = json_lines(exact.out), p = json_lines(partial.out, &partial_summary),
             f = json_lines(full.out, &full_summary);
  ASSERT_EQ(p.size(), 2u);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(f[i]["output_ids"], e[i]["output_ids"]) << "prompt " << i;
    EXPECT_EQ(p[i]["output_ids"].size(), 300u);
  }
  EXPECT_GT(partial_summary["verification"]["partial_views"].get<int64_t>(), 10) << partial_summary.dump();
  EXPECT_GT(partial_summary["plugin_stats"]["specpv"]["refreshes"].get<int64_t>(), 0) << partial_summary.dump();
  EXPECT_EQ(full_summary["verification"]["partial_views"].get<int64_t>(), 0) << full_summary.dump();
}

TEST(SpeculationCliTest, StopStringEndsTheTextBeforeIt) {
  const auto r =
      run_command(drift_in_source("generate --config configs/stories260k-ngram.toml --prompt 'Once upon a time'"
                                  " --stop 'named Li' --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["text"], ", there was a little girl ");
  EXPECT_EQ(lines[0]["finish_reason"], "stop");
}

TEST(SpeculationCliTest, UnknownProviderIsNamed) {
  const auto r = run_command(
      drift_in_source("generate --config configs/stories260k-ngram.toml --prompt 'Once' --speculative nope"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("speculative = \"nope\" is not a configured draft provider"));
  const auto bad =
      run_command(drift_in_source("generate --config configs/stories260k-ngram.toml --prompt 'Once' --adaptive maybe"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("--adaptive maybe: must be on or off"));
}

// Runs `drift bench` on the ngram config with `options`; returns its --json results.
nlohmann::json bench_json(const std::string& options, test::CommandResult& r) {
  const std::string json_path = test::make_temp_dir("bench") + "/bench.json";
  r = run_command(drift_in_source("bench --config configs/stories260k-ngram.toml " + options + " --json " +
                                  shell_quote(json_path)));
  std::ifstream file(json_path);
  return r.exit_code == 0 ? nlohmann::json::parse(file) : nlohmann::json();
}

// Adaptive speculation (the configs' default) reports the budgets it chose, one per request and
// decode step that could draft; outputs stay those of plain decoding.
TEST(SpeculationCliTest, BenchReportsTheAdaptiveBudgets) {
  test::CommandResult r;
  const nlohmann::json j = bench_json("--num-prompts 4 --max-new-tokens 48", r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("budget"));
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& off = j["results"][0];
  const auto& ngram = j["results"][1];
  EXPECT_TRUE(off["draft_budgets"].empty());
  int64_t chosen = 0, sum = 0;
  for (const auto& [budget, times] : ngram["draft_budgets"].items()) {
    EXPECT_GE(std::stoi(budget), 0);
    EXPECT_LE(std::stoi(budget), 8) << "at most [speculative] max_draft_tokens";
    chosen += times.get<int64_t>();
    sum += std::stoi(budget) * times.get<int64_t>();
  }
  EXPECT_GE(chosen, ngram["decode_only_steps"].get<int64_t>() - 8) << "a budget per drafting request and step";
  ASSERT_GT(chosen, 0);
  EXPECT_DOUBLE_EQ(ngram["mean_draft_budget"].get<double>(), static_cast<double>(sum) / static_cast<double>(chosen));
  EXPECT_EQ(ngram["outputs_equal_to_first_off"], 4) << "lossless";
}

// Fixed budgets (--adaptive off): every decode step drafts, so the draft accounting is exercised.
TEST(SpeculationCliTest, BenchPutsVariantsSideBySide) {
  test::CommandResult r;
  const nlohmann::json j = bench_json("--num-prompts 4 --max-new-tokens 24 --concurrency 2 --adaptive off", r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("tokens/s"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("[bench]")) << "progress on stderr";
  ASSERT_EQ(j["results"].size(), 2u);
  const auto& off = j["results"][0];
  const auto& ngram = j["results"][1];
  EXPECT_EQ(off["variant"], "off");
  EXPECT_EQ(ngram["variant"], "ngram");
  EXPECT_EQ(off["output_tokens"], ngram["output_tokens"]) << "lossless: the same outputs";
  EXPECT_EQ(off["draft_tokens"], 0);
  EXPECT_GT(ngram["draft_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(ngram["draft_tokens"].get<int64_t>(),
            ngram["accepted_tokens"].get<int64_t>() + ngram["rewound_tokens"].get<int64_t>());
  EXPECT_GT(ngram["speedup_vs_off"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(off["speedup_vs_off"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(off["decode_speedup_vs_off"].get<double>(), 1.0);
  EXPECT_GT(ngram["decode_only_steps"].get<int64_t>(), 0);
  EXPECT_GT(ngram["target_forward_ms_per_decode_step"].get<double>(), 0.0);
  EXPECT_GT(ngram["draft"]["propose_calls"].get<int64_t>(), 0) << "the host timed the provider's on_propose";
  EXPECT_GE(ngram["draft"]["propose_seconds"].get<double>(),
            ngram["draft"]["decode_step_seconds"].get<double>() - ngram["draft"]["forward_hook_seconds"].get<double>());
}

// The default prompt set (MT-Bench) ships with drift and is found beside the binary, not in the
// working directory: bench runs from any folder.
TEST(SpeculationCliTest, BenchFindsItsDefaultPromptSetFromAnyFolder) {
  const std::string elsewhere = test::make_temp_dir("bench-cwd");
  const auto r = run_command("cd " + shell_quote(elsewhere) + " && " + shell_quote(test::drift_exe()) +
                             " bench --config " + shell_quote(test::source_dir() + "/configs/stories260k.toml") +
                             " --num-prompts 2 --max-new-tokens 4 --variants off");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, ::testing::HasSubstr("mt_bench.jsonl")) << "the prompt set it read is named";
}

// --scenario replaces the prompt set with long prompts built from its tokens; a context the model
// cannot hold fails those requests (counted), a bad name or a context without room is an error.
TEST(SpeculationCliTest, BenchScenariosAreNamedAndChecked) {
  const std::string json_path = test::make_temp_dir("bench-scenario") + "/bench.json";
  const auto r =
      run_command(drift_in_source("bench --config configs/stories260k.toml --scenario batch4-16k "
                                  "--max-new-tokens 8 --json " +
                                  shell_quote(json_path)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream file(json_path);
  const nlohmann::json j = nlohmann::json::parse(file);
  EXPECT_EQ(j["results"][0]["prompts"], 4) << "four sequences";
  EXPECT_EQ(j["results"][0]["failed"], 4) << "stories260K holds 512 positions, not 16K";
  const auto bad = run_command(drift_in_source("bench --config configs/stories260k.toml --scenario huge"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err,
              ::testing::HasSubstr("--scenario huge: unknown (known: single-16k, single-32k, single-64k, batch4-16k)"));
  const auto no_room = run_command(
      drift_in_source("bench --config configs/stories260k.toml --scenario single-32k --max-new-tokens 40000"));
  EXPECT_EQ(no_room.exit_code, 1);
  EXPECT_THAT(no_room.err, ::testing::HasSubstr("leaves no room for a prompt in a 32768-token context"));
}

TEST(SpeculationCliTest, BenchRejectsABadPromptFile) {
  const std::string dir = test::make_temp_dir("bench-bad");
  std::ofstream(dir + "/p.jsonl") << "{\"question\": 1}\n";
  const auto r = run_command(
      drift_in_source("bench --config configs/stories260k.toml --prompts " + shell_quote(dir + "/p.jsonl")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::HasSubstr("p.jsonl line 1: expected \"turns\""));
}

}  // namespace
}  // namespace drift
