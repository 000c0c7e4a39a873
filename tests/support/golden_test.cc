// The golden comparison helpers themselves: a NaN or infinite logit never passes the tolerance,
// and the greedy rule refuses a wrong token at a clear margin, tolerates ties and HF generate's
// masking artefact, and checks the continuation after a divergence against the engine's own
// teacher-forced argmax.
#include "support/golden.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace drift::test {
namespace {

Tensor rows(const std::vector<std::vector<float>>& values) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(values.size()), static_cast<int64_t>(values[0].size())});
  for (size_t r = 0; r < values.size(); ++r) std::copy(values[r].begin(), values[r].end(), t.as<float>() + r * values[0].size());
  return t;
}

TEST(GoldenLogitErrorTest, MeasuresRelativeToTheRowScale) {
  const Tensor golden = rows({{10.0f, -2.0f, 0.5f}, {0.1f, 0.2f, 0.3f}});
  EXPECT_EQ(max_relative_logit_error(golden, golden), 0.0);
  const Tensor off = rows({{10.01f, -2.0f, 0.5f}, {0.1f, 0.2f, 0.3f}});
  EXPECT_NEAR(max_relative_logit_error(off, golden), 0.01 / 10.0, 1e-6);
}

TEST(GoldenLogitErrorTest, NanOrInfiniteLogitsNeverPass) {
  const Tensor golden = rows({{1.0f, 2.0f, 3.0f}, {0.5f, 0.25f, 0.0f}});
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    Tensor ours = rows({{1.0f, 2.0f, 3.0f}, {0.5f, 0.25f, 0.0f}});
    ours.as<float>()[4] = bad;
    EXPECT_EQ(max_relative_logit_error(ours, golden), std::numeric_limits<double>::infinity()) << bad;
    EXPECT_FALSE(max_relative_logit_error(ours, golden) <= 1e-3) << bad;
    EXPECT_FALSE(max_relative_logit_error(golden, ours) <= 1e-3) << "NaN on the golden side, " << bad;
  }
  Tensor all_nan = rows({{std::nanf(""), std::nanf(""), std::nanf("")}, {std::nanf(""), std::nanf(""), std::nanf("")}});
  EXPECT_FALSE(max_relative_logit_error(all_nan, golden) <= 1e-3);
}

TEST(GoldenLogitErrorTest, ShapeMismatchNeverPasses) {
  EXPECT_EQ(max_relative_logit_error(rows({{1.0f, 2.0f}}), rows({{1.0f, 2.0f}, {3.0f, 4.0f}})),
            std::numeric_limits<double>::infinity());
}

// Prompt {0}; three output positions over a vocab of 4, predicted by logits rows 0..2.
GoldenCase case_with(std::vector<int32_t> output, const std::vector<std::vector<float>>& logits) {
  GoldenCase c;
  c.prompt = {0};
  c.output = std::move(output);
  c.logits = rows(logits);
  return c;
}

// An engine whose own teacher-forced logits pick `argmax` at every position.
TeacherForcedScorer scorer_picking(std::vector<int32_t> argmax) {
  return [argmax](const std::vector<int32_t>& seq) {
    Tensor t = Tensor::zeros({static_cast<int64_t>(seq.size()), 4});
    for (size_t k = 0; k < argmax.size(); ++k) t.as<float>()[k * 4 + argmax[k]] = 1.0f;  // row k predicts seq[k+1]
    return t;
  };
}

const TeacherForcedScorer kNeverCalled = [](const std::vector<int32_t>&) -> Tensor {
  ADD_FAILURE() << "the golden applied throughout; self-consistency must not be needed";
  return Tensor::zeros({1, 4});
};

TEST(GreedyMismatchTest, ClearMarginsRequireTheGoldenToken) {
  const GoldenCase c = case_with({1, 2, 3}, {{0, 5, 0, 0}, {0, 0, 5, 0}, {0, 0, 0, 5}});
  EXPECT_EQ(greedy_mismatch(c, {1, 2, 3}, kNeverCalled), "");
  EXPECT_NE(greedy_mismatch(c, {1, 2, 0}, kNeverCalled).find("token 2 is 0"), std::string::npos);
  EXPECT_NE(greedy_mismatch(c, {1, 2}, kNeverCalled).find("produced 2 tokens"), std::string::npos);
}

TEST(GreedyMismatchTest, TieLetsTheEngineDivergeThenItsOwnArgmaxRules) {
  // Position 1 is a tie (margin 5e-4): the engine may take token 3 instead of HF's 2, after which
  // the golden row 2 describes HF's sequence, not ours.
  const GoldenCase c = case_with({1, 2, 3}, {{0, 5, 0, 0}, {0, 0, 5.0f, 4.9995f}, {0, 0, 0, 5}});
  EXPECT_EQ(greedy_mismatch(c, {1, 3, 0}, scorer_picking({1, 3, 0})), "");
  const std::string wrong = greedy_mismatch(c, {1, 3, 0}, scorer_picking({1, 3, 2}));
  EXPECT_NE(wrong.find("token 2 is 0, but the engine's own teacher-forced argmax there is 2"), std::string::npos)
      << wrong;
}

TEST(GreedyMismatchTest, DivergenceAtAClearMarginFails) {
  const GoldenCase c = case_with({1, 2, 3}, {{0, 5, 0, 0}, {0, 0, 5, 4}, {0, 0, 0, 5}});
  EXPECT_NE(greedy_mismatch(c, {1, 3, 3}, scorer_picking({1, 3, 3})).find("token 1 is 3"), std::string::npos);
}

TEST(GreedyMismatchTest, HfGenerateArtefactRequiresTheTeacherForcedArgmax) {
  // HF generate produced 2 at position 1 although its own teacher-forced logits clearly pick 1
  // (qwen3-tiny's pad-token masking): the engine must produce 1, and HF's 2 is refused.
  const GoldenCase c = case_with({1, 2, 3}, {{0, 5, 0, 0}, {0, 5, 1, 0}, {0, 0, 0, 5}});
  EXPECT_EQ(greedy_mismatch(c, {1, 1, 0}, scorer_picking({1, 1, 0})), "");
  EXPECT_NE(greedy_mismatch(c, {1, 2, 3}, kNeverCalled).find("token 1 is 2"), std::string::npos);
}

}  // namespace
}  // namespace drift::test
