// Rotary inverse frequencies against independent references: transformers' default formula and
// its Llama 3.1 scaling (_compute_llama3_parameters), transcribed here in double precision, plus
// anchor values computed with python3 from the same formula.
#include "core/model/rope_frequencies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace drift {
namespace {

// transformers: inv_freq = 1 / theta^(2i/d); wavelen = 2 pi / inv_freq; wavelengths shorter than
// old_len / high_freq_factor are kept, longer than old_len / low_freq_factor divided by factor,
// and in between (1 - s) * f / factor + s * f with s = (old_len / wavelen - low) / (high - low).
std::vector<double> reference_llama3_inv_freq(int64_t head_dim, const RopeConfig& rope) {
  const double old_len = static_cast<double>(rope.original_max_position);
  std::vector<double> out;
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double f = 1.0 / std::pow(rope.theta, static_cast<double>(i) / static_cast<double>(head_dim));
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < old_len / rope.high_freq_factor) {
      out.push_back(f);
    } else if (wavelen > old_len / rope.low_freq_factor) {
      out.push_back(f / rope.factor);
    } else {
      const double s = (old_len / wavelen - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
      out.push_back((1.0 - s) * f / rope.factor + s * f);
    }
  }
  return out;
}

RopeConfig llama31() {
  RopeConfig rope;
  rope.type = RopeType::Llama3;
  rope.theta = 500000.0;
  rope.factor = 8.0;
  rope.low_freq_factor = 1.0;
  rope.high_freq_factor = 4.0;
  rope.original_max_position = 8192;
  return rope;
}

// fp32 (as transformers computes it) against the double reference: a few float ulps.
constexpr double kRelTol = 2e-6;

void expect_close(const std::vector<float>& ours, const std::vector<double>& expected) {
  ASSERT_EQ(ours.size(), expected.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_NEAR(ours[i], expected[i], kRelTol * expected[i]) << "index " << i;
}

TEST(RopeFrequenciesTest, DefaultMatchesTheTransformersFormula) {
  RopeConfig rope;
  rope.theta = 10000.0;
  std::vector<double> expected;
  for (int64_t i = 0; i < 64; i += 2) expected.push_back(1.0 / std::pow(10000.0, i / 64.0));
  expect_close(compute_rope_frequencies(rope, 64).inv_freq, expected);
}

TEST(RopeFrequenciesTest, Llama31ScalingMatchesReferenceForHeadDim64And128) {
  for (int64_t head_dim : {64, 128}) {
    SCOPED_TRACE(head_dim);
    expect_close(compute_rope_frequencies(llama31(), head_dim).inv_freq, reference_llama3_inv_freq(head_dim, llama31()));
  }
}

TEST(RopeFrequenciesTest, Llama31AnchorsFromPython) {
  // python3: f = 1/500000**(i/d); w = 2*math.pi/f; keep f if w < 8192/4, f/8 if w > 8192/1,
  // else s = (8192/w - 1)/(4 - 1) and (1-s)*f/8 + s*f. Index j is inv_freq[j] (i = 2j).
  const std::vector<float> d128 = compute_rope_frequencies(llama31(), 128).inv_freq;
  const std::vector<std::pair<size_t, double>> anchors128 = {
      {0, 1.0},                                        // high frequency: unchanged
      {1, 0.8146172338565447},                         // high
      {29, 0.002166570763503359},                      // first of the smoothed band
      {32, 0.0005248461609929547},                     // smoothed
      {34, 0.00017850781276799638},                    // last of the smoothed band
      {63, 3.068925988914511e-07}};                    // low frequency: divided by 8
  for (const auto& [j, value] : anchors128) EXPECT_NEAR(d128[j], value, kRelTol * value) << "head_dim 128, index " << j;
  const std::vector<float> d64 = compute_rope_frequencies(llama31(), 64).inv_freq;
  EXPECT_NEAR(d64[15], 0.0013718935677611381, kRelTol * 0.0013718935677611381);
  EXPECT_NEAR(d64[31], 3.7673226901739635e-07, kRelTol * 3.7673226901739635e-07);
}

TEST(RopeFrequenciesTest, LinearScalingDividesEveryFrequency) {
  RopeConfig rope;
  rope.type = RopeType::Linear;
  rope.factor = 4.0;
  std::vector<double> expected;
  for (int64_t i = 0; i < 32; i += 2) expected.push_back(1.0 / std::pow(10000.0, i / 32.0) / 4.0);
  expect_close(compute_rope_frequencies(rope, 32).inv_freq, expected);
}

}  // namespace
}  // namespace drift
