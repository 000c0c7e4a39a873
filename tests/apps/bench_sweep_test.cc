// `drift bench --sweep` on the CPU with stories260K: the prefill rows report the forward's matrix
// arithmetic per second (prefill is compute-bound, so it is set against the device's dense peak).
// The expected figure is counted here from config.json on its own: 2 flops per weight per token for
// the projections, one logit row, and causal attention's 4 * head_dim flops per (query, key) pair
// and head.
#include <cmath>
#include <fstream>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

double expected_prefill_flops(const nlohmann::json& c, double len) {
  const double hidden = c["hidden_size"], inter = c["intermediate_size"], layers = c["num_hidden_layers"];
  const double heads = c["num_attention_heads"], kv_heads = c["num_key_value_heads"], vocab = c["vocab_size"];
  const double head_dim = hidden / heads;
  const double per_layer = hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden + 3 * hidden * inter;
  return 2 * per_layer * layers * len + 2 * vocab * hidden + 4 * head_dim * heads * layers * len * (len + 1) / 2;
}

TEST(BenchSweepTest, PrefillRowsReportTheirArithmeticRate) {
  const std::string model = test::test_data_path("models/stories260K");
  ASSERT_FALSE(model.empty());
  const std::string json_path = test::make_temp_dir("sweep") + "/sweep.json";
  const auto r = test::run_command(test::shell_quote(test::drift_exe()) + " bench --model " + test::shell_quote(model) +
                                   " --sweep --sweep-only prefill --sweep-repeats 1 --sweep-max-context 512 --json " +
                                   test::shell_quote(json_path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("| TFLOP/s |"));
  std::ifstream config_file(model + "/config.json");
  const nlohmann::json config = nlohmann::json::parse(config_file);
  std::ifstream sweep_file(json_path);
  const nlohmann::json sweep = nlohmann::json::parse(sweep_file);
  int prefill_rows = 0;
  for (const auto& row : sweep["rows"]) {
    if (row["kind"] != "prefill") continue;
    ++prefill_rows;
    const double len = row["context"], seconds = row["step_ms"].get<double>() * 1e-3;
    EXPECT_NEAR(row["tflops"].get<double>() * 1e12 * seconds / expected_prefill_flops(config, len), 1.0, 1e-6)
        << "prefill of " << len;
  }
  EXPECT_EQ(prefill_rows, 1) << "512; the 8K prefill is past --sweep-max-context";
}

// A mixture of experts' roofline counts the weights a forward reads: attention, router and head,
// plus the experts its rows are expected to choose -- E (1 - (1 - k/E)^rows) of E -- counted here
// from config.json (golden/gptoss-tiny: 4 experts, top 2, stored dense; the CPU backend's fp32).
double expected_moe_weight_bytes(const nlohmann::json& c, double rows) {
  const double hidden = c["hidden_size"], inter = c["intermediate_size"], layers = c["num_hidden_layers"];
  const double heads = c["num_attention_heads"], kv_heads = c["num_key_value_heads"], vocab = c["vocab_size"];
  const double head_dim = c["head_dim"], experts = c["num_local_experts"], k = c["num_experts_per_tok"];
  const double attention = hidden * (heads + 2 * kv_heads) * head_dim + heads * head_dim * hidden;
  const double chosen = experts * (1 - std::pow(1 - k / experts, rows));
  return 4 * (layers * (attention + hidden * experts + chosen * 3 * hidden * inter) + vocab * hidden);
}

TEST(BenchSweepTest, MixtureOfExpertsRooflineCountsTheExpertsRowsChoose) {
  const std::string model = test::test_data_path("golden/gptoss-tiny");
  ASSERT_FALSE(model.empty());
  const std::string json_path = test::make_temp_dir("sweep_moe") + "/sweep.json";
  const auto r = test::run_command(test::shell_quote(test::drift_exe()) + " bench --model " + test::shell_quote(model) +
                                   " --sweep --sweep-only decode --sweep-repeats 1 --sweep-max-context 4096 "
                                   "--sweep-long-batches 1,8 --json " +
                                   test::shell_quote(json_path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream config_file(model + "/config.json");
  const nlohmann::json config = nlohmann::json::parse(config_file);
  std::ifstream sweep_file(json_path);
  const nlohmann::json sweep = nlohmann::json::parse(sweep_file);
  const double kv_per_token = sweep["kv_bytes_per_token"];
  std::vector<std::pair<int64_t, int64_t>> rows;  // (batch, context)
  for (const auto& row : sweep["rows"]) {
    const double batch = row["batch"], context = row["context"];
    rows.emplace_back(static_cast<int64_t>(batch), static_cast<int64_t>(context));
    const double weights = row["bytes_read"].get<double>() - kv_per_token * batch * context;
    EXPECT_NEAR(weights / expected_moe_weight_bytes(config, batch), 1.0, 1e-9) << "batch " << batch;
  }
  // 512 at every batch; 4096 at the long batches asked for (1 and 8).
  EXPECT_THAT(rows, ::testing::ElementsAre(std::pair<int64_t, int64_t>{1, 512}, std::pair<int64_t, int64_t>{8, 512},
                                           std::pair<int64_t, int64_t>{32, 512}, std::pair<int64_t, int64_t>{64, 512},
                                           std::pair<int64_t, int64_t>{1, 4096}, std::pair<int64_t, int64_t>{8, 4096}));
}

TEST(BenchSweepTest, LongBatchesOutsideTheSweepsAreRefused) {
  const std::string model = test::test_data_path("models/stories260K");
  ASSERT_FALSE(model.empty());
  const auto r = test::run_command(test::shell_quote(test::drift_exe()) + " bench --model " + test::shell_quote(model) +
                                   " --sweep --sweep-long-batches 1,3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, ::testing::HasSubstr("--sweep-long-batches 1,3: '3' is not one of the sweep's decode batches"));
}

}  // namespace
}  // namespace drift
