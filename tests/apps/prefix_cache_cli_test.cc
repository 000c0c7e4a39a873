// The prefix cache through the `drift` binary: configs/stories260k-prefix-cache.toml generates
// exactly what configs/stories260k.toml does while a later request adopts an earlier one's pages
// (cached_tokens per request, the closing summary line's prefix_cache figures, the [stats] line);
// --no-prefix-cache keeps the prompts out of the cache; `drift bench --system-prompt-tokens`
// reports hit rate and prefill tokens avoided per variant, with each output compared to the
// first config's.
#include <fstream>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::drift_in_source;
using test::json_lines;
using test::run_command;

// Three copies of one 300-token prompt. With the configs' 256-token step budget the first
// request's prompt is in after step 2 and the third request is admitted in step 3: it finds the
// first one's 18 full pages (288 tokens; the page holding its last token is computed).
std::string three_long_prompts() {
  std::string ids;
  for (int i = 0; i < 300; ++i) ids += fmt::format("{}{}", i ? "," : "", 3 + (i * 37) % 500);
  return " --prompt-ids " + ids + " --prompt-ids " + ids + " --prompt-ids " + ids + " --max-new-tokens 8 --json";
}

TEST(PrefixCacheCliTest, CachedRunsGenerateThePlainOutputAndReportTheirHits) {
  const auto plain = run_command(drift_in_source("generate --config configs/stories260k.toml") + three_long_prompts());
  const auto cached =
      run_command(drift_in_source("generate --config configs/stories260k-prefix-cache.toml --cache-salt t1") +
                  three_long_prompts());
  const auto opted_out =
      run_command(drift_in_source("generate --config configs/stories260k-prefix-cache.toml --no-prefix-cache") +
                  three_long_prompts());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  ASSERT_EQ(opted_out.exit_code, 0) << opted_out.err;
  nlohmann::json summary, opted_out_summary;
  const auto p = json_lines(plain.out), c = json_lines(cached.out, &summary),
             o = json_lines(opted_out.out, &opted_out_summary);
  ASSERT_EQ(c.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(c[i]["output_ids"], p[i]["output_ids"]) << "prompt " << i;
    EXPECT_EQ(o[i]["output_ids"], p[i]["output_ids"]) << "prompt " << i;
    EXPECT_EQ(o[i]["stats"]["cached_tokens"], 0);
  }
  EXPECT_EQ(c[2]["stats"]["cached_tokens"], 288);
  const auto& cache = summary["prefix_cache"];
  EXPECT_EQ(cache["queries"], 3);
  EXPECT_EQ(cache["hits"], 1);
  EXPECT_EQ(cache["hit_tokens"], 288);
  EXPECT_EQ(cache["query_tokens"], 900);
  EXPECT_GT(cache["pages_held"].get<int64_t>(), 18);
  EXPECT_EQ(summary["prompts"], 3);
  EXPECT_THAT(cached.err,
              ::testing::HasSubstr("[stats] prefix cache: 3 queries, 1 hits, 288 of 900 prompt tokens cached"));
  EXPECT_EQ(opted_out_summary["prefix_cache"]["queries"], 0) << "--no-prefix-cache asks nothing";
  EXPECT_EQ(opted_out_summary["prefix_cache"]["pages_held"], 0) << "and offers nothing";
}

TEST(PrefixCacheCliTest, BenchReportsHitRateAndPrefillAvoidedPerVariant) {
  const std::string json_path = test::make_temp_dir("prefix-bench") + "/bench.json";
  const auto r = run_command(drift_in_source(
      "bench --config configs/stories260k-prefix-cache.toml --compare configs/stories260k.toml --num-prompts 6 "
      "--max-new-tokens 8 --system-prompt-tokens 120 --variants off --json " +
      json_path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(json_path);
  const nlohmann::json results = nlohmann::json::parse(in)["results"];
  ASSERT_EQ(results.size(), 2u);
  const auto& cached = results[0];
  const auto& plain = results[1];
  const int64_t completed = cached["prompts"].get<int64_t>() - cached["failed"].get<int64_t>();
  ASSERT_GT(completed, 2);
  // One request at a time: every one after the first finds the 120-token system prompt's 7 pages.
  EXPECT_EQ(cached["prefix_cache"]["hits"], completed - 1);
  EXPECT_GE(cached["prefix_cache"]["prefill_tokens_avoided"].get<int64_t>(), (completed - 1) * 112);
  EXPECT_EQ(cached["prefill_tokens"].get<int64_t>() + cached["prefix_cache"]["prefill_tokens_avoided"].get<int64_t>(),
            plain["prefill_tokens"].get<int64_t>());
  EXPECT_EQ(plain["prefix_cache"]["queries"], 0);
  EXPECT_EQ(plain["outputs_equal_to_first_off"], cached["prompts"]) << "the cache is lossless";
  EXPECT_THAT(r.out, ::testing::HasSubstr("cache%"));
}

TEST(PrefixCacheCliTest, ABadSettingStopsTheRunNamingTheKey) {
  const std::string dir = test::make_temp_dir("prefix-bad");
  std::ofstream(dir + "/bad.toml")
      << "schema_version = 1\n[model]\npath = " << nlohmann::json(test::test_data_path("models/stories260K")).dump()
      << "\n[[plugins]]\nname = \"prefix_cache\"\n[plugins.prefix_cache]\ncapacity_fraction = 2.0\n";
  const auto r = run_command(drift_in_source("generate --config " + dir + "/bad.toml --prompt-ids 1,2,3"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, ::testing::HasSubstr("capacity_fraction = 2: must be in (0, 1]"));
  EXPECT_THAT(r.err, ::testing::HasSubstr("plugin 'prefix_cache' could not be loaded"));
}

}  // namespace
}  // namespace drift
