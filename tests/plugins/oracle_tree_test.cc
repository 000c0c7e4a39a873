// The oracle's tree shapes (tests/speculation/oracle_tree): the true continuation with
// corruption 0, exactly one true token among each level's distinct candidates, no true token at
// all with corruption 1, budget and the end of the reference respected, reproducible.
#include "oracle_tree.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drift::oracle {
namespace {

const std::vector<int32_t> kTruth = {5, 9, 2, 7, 7, 1};

TEST(OracleTree, PerfectChainIsTheTruth) {
  const Tree t = build(Shape{0.0, 1, 4, 3}, kTruth, 1, 10, 16, 100);
  EXPECT_THAT(t.tokens, ::testing::ElementsAre(5, 9, 2, 7));
  EXPECT_THAT(t.parents, ::testing::ElementsAre(-1, 0, 1, 2));
}

TEST(OracleTree, EachLevelHoldsTheTruthOnceAmongDistinctSiblings) {
  const Tree t = build(Shape{0.0, 3, 4, 3}, kTruth, 1, 10, 64, 100);
  ASSERT_EQ(t.tokens.size(), 12u);
  std::map<int32_t, std::vector<int32_t>> children;
  for (size_t i = 0; i < t.tokens.size(); ++i) children[t.parents[i]].push_back(t.tokens[i]);
  int32_t parent = -1;
  for (size_t level = 0; level < 4; ++level) {
    const auto& c = children[parent];
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(std::set<int32_t>(c.begin(), c.end()).size(), 3u);
    EXPECT_EQ(std::count(c.begin(), c.end(), kTruth[level]), 1);
    for (size_t i = 0; i < t.tokens.size(); ++i)  // descend through the true node
      if (t.parents[i] == parent && t.tokens[i] == kTruth[level]) parent = static_cast<int32_t>(i);
  }
}

TEST(OracleTree, FullCorruptionNeverProposesTheTruth) {
  for (int64_t seq = 0; seq < 20; ++seq) {
    const Tree t = build(Shape{1.0, 2, 1, 3}, kTruth, seq, 0, 8, 100);
    ASSERT_EQ(t.tokens.size(), 2u);
    EXPECT_NE(t.tokens[0], kTruth[0]);
    EXPECT_NE(t.tokens[1], kTruth[0]);
  }
}

TEST(OracleTree, BudgetEndOfReferenceAndReproducibility) {
  EXPECT_EQ(build(Shape{0.0, 1, 4, 0}, kTruth, 1, 0, 2, 100).tokens.size(), 2u);
  EXPECT_EQ(build(Shape{0.0, 1, 4, 0}, {5, 9}, 1, 0, 8, 100).tokens.size(), 2u) << "past the reference: nothing";
  EXPECT_TRUE(build(Shape{0.0, 1, 4, 0}, {}, 1, 0, 8, 100).tokens.empty());
  const Tree a = build(Shape{0.5, 3, 4, 9}, kTruth, 4, 7, 64, 100),
             b = build(Shape{0.5, 3, 4, 9}, kTruth, 4, 7, 64, 100);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.parents, b.parents);
}

}  // namespace
}  // namespace drift::oracle
