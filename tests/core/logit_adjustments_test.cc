// Logit adjustments (core/logit_adjustments.h) against the definitions written out per token: the
// bias, then the repetition penalty over prompt and output, then the frequency and presence
// penalties over the output (a draft path counting as output), and min_tokens holding back the
// end-of-sequence and stop tokens.
#include "core/logit_adjustments.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace drift {
namespace {

constexpr int64_t kVocab = 40;

double expected_logit(double x, int32_t token, const SamplingParams& p, const std::vector<int32_t>& prompt,
                      const std::vector<int32_t>& output, const std::vector<int32_t>& eos, int64_t index) {
  for (const auto& [t, bias] : p.logit_bias)
    if (t == token) x += bias;
  const auto in_output = std::count(output.begin(), output.end(), token);
  if (in_output > 0 || std::count(prompt.begin(), prompt.end(), token) > 0)
    x = x > 0 ? x / p.repetition_penalty : x * p.repetition_penalty;
  x -= p.frequency_penalty * static_cast<double>(in_output) + (in_output > 0 ? p.presence_penalty : 0.0);
  const bool held =
      std::count(eos.begin(), eos.end(), token) || std::count(p.stop_token_ids.begin(), p.stop_token_ids.end(), token);
  return held && index < p.min_tokens ? -INFINITY : x;
}

TEST(LogitAdjustments, EqualTheDefinitionsTokenByToken) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> token(0, kVocab - 1);
  std::uniform_real_distribution<float> logit(-6.0f, 6.0f);
  for (int trial = 0; trial < 200; ++trial) {
    SamplingParams p;
    p.repetition_penalty = trial % 4 == 0 ? 1.0 : 0.5 + (rng() % 100) / 50.0;
    p.frequency_penalty = trial % 3 == 0 ? 0.0 : -2.0 + (rng() % 400) / 100.0;
    p.presence_penalty = trial % 5 == 0 ? 0.0 : -2.0 + (rng() % 400) / 100.0;
    for (int i = 0; i < trial % 4; ++i) p.logit_bias.emplace_back(token(rng), -100.0 + (rng() % 2000) / 10.0);
    std::sort(p.logit_bias.begin(), p.logit_bias.end());
    p.logit_bias.erase(std::unique(p.logit_bias.begin(), p.logit_bias.end(),
                                   [](const auto& a, const auto& b) { return a.first == b.first; }),
                       p.logit_bias.end());
    p.stop_token_ids = {token(rng)};
    p.min_tokens = trial % 7;
    const std::vector<int32_t> eos = {1, 2};
    std::vector<int32_t> prompt(rng() % 12), output(rng() % 12), path(rng() % 4);
    for (auto* v : {&prompt, &output, &path})
      for (int32_t& t : *v) t = token(rng);
    const auto index = static_cast<int64_t>(output.size() + path.size());
    const TokenOccurrences seen(prompt, output);
    const std::vector<LogitAdjustment> adjustments = logit_adjustments(p, seen, path, index, eos);
    if (!p.shapes_logits()) {
      EXPECT_TRUE(adjustments.empty());
    }
    std::vector<float> row(kVocab);
    for (float& x : row) x = logit(rng);
    if (trial % 2 == 0) row[token(rng)] = 0.0f;  // neither positive nor negative: multiplied
    std::vector<float> shaped = row;
    apply_logit_adjustments(shaped.data(), kVocab, adjustments);
    std::vector<int32_t> output_and_path = output;
    output_and_path.insert(output_and_path.end(), path.begin(), path.end());
    for (int32_t t = 0; t < kVocab; ++t) {
      const double want = expected_logit(row[t], t, p, prompt, output_and_path, eos, index);
      if (std::isinf(want)) {
        EXPECT_EQ(shaped[t], -INFINITY) << "trial " << trial << " token " << t;
      } else {
        EXPECT_NEAR(shaped[t], want, 1e-4 * std::max(1.0, std::abs(want))) << "trial " << trial << " token " << t;
      }
    }
  }
}

TEST(LogitAdjustments, OnlyTheNamedTokensAreListedInTokenOrder) {
  SamplingParams p;
  p.logit_bias = {{9, 1.0}, {3, -1.0}};
  const TokenOccurrences seen(std::vector<int32_t>{5, 5}, std::vector<int32_t>{7});
  auto a = logit_adjustments(p, seen, {}, 0, std::vector<int32_t>{2});
  ASSERT_EQ(a.size(), 2u);  // penalties off: only the biased tokens
  EXPECT_EQ(a[0].token, 3);
  EXPECT_EQ(a[1].token, 9);
  p.presence_penalty = 1.0;  // output tokens (7, and the path's 8) now, the prompt's 5 not
  a = logit_adjustments(p, seen, std::vector<int32_t>{8}, 1, std::vector<int32_t>{2});
  std::vector<int32_t> tokens;
  for (const LogitAdjustment& x : a) tokens.push_back(x.token);
  EXPECT_EQ(tokens, (std::vector<int32_t>{3, 7, 8, 9}));
  p.min_tokens = 2;  // index 1 < 2: EOS 2 held back; at index 2 no longer
  a = logit_adjustments(p, seen, {}, 1, std::vector<int32_t>{2});
  EXPECT_EQ(a.front().token, 2);
  EXPECT_EQ(a.front().after, -INFINITY);
  EXPECT_NE(logit_adjustments(p, seen, {}, 2, std::vector<int32_t>{2}).front().token, 2);
}

TEST(LogitAdjustments, RangesAreValidated) {
  SamplingParams p;
  p.presence_penalty = 2.5;
  EXPECT_EQ(validate_sampling_params(p), "presence_penalty = 2.5: must be in [-2, 2]");
  p = {};
  p.repetition_penalty = 0.0;
  EXPECT_EQ(validate_sampling_params(p), "repetition_penalty = 0: must be a finite number > 0 (1 = off)");
  p = {};
  p.logit_bias = {{4, 150.0}};
  EXPECT_EQ(validate_sampling_params(p), "logit_bias = {4: 150}: biases must be in [-100, 100]");
  p = {};
  p.min_tokens = 200;
  EXPECT_EQ(validate_sampling_params(p), "min_tokens = 200: must be in [0, max_new_tokens] (max_new_tokens = 128)");
}

}  // namespace
}  // namespace drift
