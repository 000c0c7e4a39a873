// Sampler: greedy is argmax; filtered sampling follows the distribution it should (checked
// against exact probabilities computed here); the same seed gives the same tokens whatever the
// batch composition (the draw depends only on seed and output index).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/engine.h"
#include "core/sampler.h"
#include "support/fake_executor.h"

namespace drift {
namespace {

TEST(SamplerTest, GreedyIsArgmaxLowestIndexOnTies) {
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f};
  SamplingParams p;
  EXPECT_EQ(sample_token(logits.data(), 4, p, 0, 0), 1);
}

// Empirical frequencies over many draws against the exact filtered distribution.
void expect_distribution(const std::vector<float>& logits, const SamplingParams& p, const std::vector<double>& expected) {
  std::map<int32_t, int> counts;
  const int draws = 200000;
  for (int i = 0; i < draws; ++i) counts[sample_token(logits.data(), logits.size(), p, 7, i)]++;
  for (size_t id = 0; id < expected.size(); ++id)
    EXPECT_NEAR(counts[static_cast<int32_t>(id)] / static_cast<double>(draws), expected[id], 0.005) << "token " << id;
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p;
  double sum = 0;
  for (float l : logits) sum += std::exp(l / temperature);
  for (float l : logits) p.push_back(std::exp(l / temperature) / sum);
  return p;
}

TEST(SamplerTest, TemperatureSamplesTheSoftmax) {
  std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  SamplingParams p;
  p.temperature = 0.7;
  expect_distribution(logits, p, softmax(logits, 0.7));
}

TEST(SamplerTest, TopKTopPAndMinPRenormaliseTheKeptSet) {
  std::vector<float> logits = {3.0f, 2.0f, 1.0f, 0.0f};
  const auto full = softmax(logits, 1.0);  // ~0.644, 0.237, 0.087, 0.032
  {
    SamplingParams p;
    p.temperature = 1.0;
    p.top_k = 2;
    const double z = full[0] + full[1];
    expect_distribution(logits, p, {full[0] / z, full[1] / z, 0, 0});
  }
  {
    SamplingParams p;
    p.temperature = 1.0;
    p.top_p = 0.9;  // 0.644 + 0.237 = 0.881 < 0.9, so the third token is kept too
    const double z = full[0] + full[1] + full[2];
    expect_distribution(logits, p, {full[0] / z, full[1] / z, full[2] / z, 0});
  }
  {
    SamplingParams p;
    p.temperature = 1.0;
    p.min_p = 0.2;  // keeps tokens with prob >= 0.2 * 0.644 = 0.129
    const double z = full[0] + full[1];
    expect_distribution(logits, p, {full[0] / z, full[1] / z, 0, 0});
  }
}

TEST(SamplerTest, SameSeedSameOutputWhateverTheBatch) {
  auto run = [](int companions) {
    EngineOptions o;
    o.num_pages = 64;
    o.block_size = 4;
    o.limits = {16, 64, 256};
    Engine engine(o, std::make_unique<test::FakeExecutor>(40, 64, 4));
    // The fake's one-hot logits would make sampling greedy; temperature 50 flattens them so the
    // seed decides.
    SamplingParams p;
    p.temperature = 50.0;
    p.max_new_tokens = 30;
    p.seed = 99;
    for (int i = 0; i < companions; ++i) {
      SamplingParams other = p;
      other.seed = 1000 + i;
      engine.add_request({static_cast<int32_t>(i + 1), 2}, other);
    }
    const int64_t id = engine.add_request({5, 6, 7}, p);
    while (engine.has_unfinished()) engine.step();
    return engine.request(id).output;
  };
  const auto alone = run(0);
  EXPECT_EQ(alone, run(3));
  EXPECT_EQ(alone, run(9));
  EXPECT_NE(alone, test::FakeExecutor::reference_continuation({5, 6, 7}, 30, 40)) << "sampling had no effect";
}

TEST(SamplerTest, SamplingParamValidationNamesFieldAndValue) {
  SamplingParams p;
  p.temperature = std::nan("");
  EXPECT_NE(validate_sampling_params(p).find("temperature"), std::string::npos);
  p = {};
  p.top_p = 1.5;
  EXPECT_EQ(validate_sampling_params(p), "top_p = 1.5: must be in (0, 1]");
  p = {};
  EXPECT_EQ(validate_sampling_params(p), "");
}

}  // namespace
}  // namespace drift
