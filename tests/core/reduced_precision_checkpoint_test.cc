// Sharded f16 / bf16 checkpoints through the whole engine: llama-tiny is written at test time as
// two shards plus model.safetensors.index.json in reduced precision, loaded by Engine::from_config
// and scored. Against the transformers golden (fp32 weights) the golden README's reduced-precision
// rule applies: each side's top token within the other's top 5, log-probs close -- the independent
// check that the f16/bf16 weights were decoded right (exact bit patterns are checked in
// safetensors_test). Against the engine on a single-file fp32 checkpoint of the same rounded
// values (read back through the same conversion), logits must be identical: the sharded,
// reduced-precision path (index lookup, per-shard reads, upload) must add no difference of its own.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/engine.h"
#include "support/checkpoint_copy.h"
#include "support/golden.h"
#include "support/test_data.h"

namespace drift {
namespace {

std::unique_ptr<Engine> engine_for(const std::string& dir) {
  EngineConfig config;
  config.model.path = dir;
  config.kv_cache.num_pages = 32;
  return Engine::from_config(config);
}

std::vector<double> log_softmax(const float* row, int64_t vocab) {
  double max_v = row[0], sum = 0.0;
  for (int64_t v = 1; v < vocab; ++v) max_v = std::max<double>(max_v, row[v]);
  for (int64_t v = 0; v < vocab; ++v) sum += std::exp(row[v] - max_v);
  std::vector<double> out(vocab);
  for (int64_t v = 0; v < vocab; ++v) out[v] = row[v] - max_v - std::log(sum);
  return out;
}

bool in_top5(const std::vector<double>& logprobs, int32_t token) {
  int64_t better = 0;
  for (double lp : logprobs) better += lp > logprobs[token] ? 1 : 0;
  return better < 5;
}

int32_t argmax(const std::vector<double>& v) { return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin()); }

struct Agreement {
  int64_t rows = 0, outside_top5 = 0;
  double worst_logprob_diff = 0.0;
};

// Row by row over the golden's rows: top tokens in each other's top 5, |log p| of each side's top
// token under both distributions.
void accumulate(const Tensor& ours, const Tensor& golden, Agreement& a) {
  const int64_t vocab = golden.dim(1);
  for (int64_t r = 0; r < golden.dim(0); ++r) {
    const auto o = log_softmax(ours.as<float>() + r * vocab, vocab);
    const auto g = log_softmax(golden.as<float>() + r * vocab, vocab);
    const int32_t ours_top = argmax(o), golden_top = argmax(g);
    a.outside_top5 += (in_top5(g, ours_top) && in_top5(o, golden_top)) ? 0 : 1;
    a.worst_logprob_diff = std::max({a.worst_logprob_diff, std::fabs(o[ours_top] - g[ours_top]),
                                     std::fabs(o[golden_top] - g[golden_top])});
    ++a.rows;
  }
}

class ReducedPrecisionCheckpointTest : public ::testing::TestWithParam<DType> {
 protected:
  void TearDown() override {
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }
  std::string temp_dir() { return dirs_.emplace_back(test::make_temp_dir("drift-reduced")); }
  std::vector<std::string> dirs_;
};

TEST_P(ReducedPrecisionCheckpointTest, ShardedCopyScoresLikeTheGoldenAndExactlyLikeItsFp32Values) {
  const std::string golden_dir = test::test_data_path("golden/llama-tiny");
  ASSERT_FALSE(golden_dir.empty());
  const std::string sharded = temp_dir(), rounded_f32 = temp_dir();
  test::write_checkpoint(sharded, test::read_checkpoint(golden_dir), GetParam(), 2);
  ASSERT_TRUE(std::filesystem::exists(sharded + "/model.safetensors.index.json"));
  // Reading the reduced copy back gives the rounded values in fp32.
  test::write_checkpoint(rounded_f32, test::read_checkpoint(sharded), DType::F32, 1);

  auto reduced = engine_for(sharded);
  auto reference = engine_for(rounded_f32);
  Agreement agreement;
  double worst_vs_rounded = 0.0;
  for (const auto& c : test::load_golden_cases(golden_dir)) {
    const Tensor ours = reduced->score(c.sequence());
    accumulate(test::first_rows(ours, c.logits.dim(0)), c.logits, agreement);
    worst_vs_rounded = std::max(worst_vs_rounded, test::max_relative_logit_error(ours, reference->score(c.sequence())));
  }
  std::printf("[reduced] %s: %ld rows, %ld outside top-5, worst |logprob diff| %.3g, vs rounded fp32 %.3g\n",
              dtype_name(GetParam()), static_cast<long>(agreement.rows), static_cast<long>(agreement.outside_top5),
              agreement.worst_logprob_diff, worst_vs_rounded);
  EXPECT_EQ(agreement.outside_top5, 0);
  EXPECT_LE(agreement.worst_logprob_diff, GetParam() == DType::BF16 ? 0.1 : 0.02);
  EXPECT_EQ(worst_vs_rounded, 0.0) << "the sharded reduced-precision checkpoint loads differently from its fp32 values";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReducedPrecisionCheckpointTest, ::testing::Values(DType::BF16, DType::F16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace drift
