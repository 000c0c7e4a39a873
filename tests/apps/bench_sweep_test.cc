// `drift bench --sweep` on the CPU with stories260K: the prefill rows report the forward's matrix
// arithmetic per second (prefill is compute-bound, so it is set against the device's dense peak).
// The expected figure is counted here from config.json on its own: 2 flops per weight per token for
// the projections, one logit row, and causal attention's 4 * head_dim flops per (query, key) pair
// and head.
#include <fstream>

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

}  // namespace
}  // namespace drift
