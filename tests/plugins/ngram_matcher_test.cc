// Prompt-lookup matching (plugins/ngram): the longest, then most recent, earlier occurrence of
// the sequence's last n tokens predicts what follows; several matches merge into a trie whose
// siblings are distinct; budget, depth and n-gram bounds hold exactly.
#include "ngram_matcher.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace drift::ngram {
namespace {

using ::testing::ElementsAre;

TEST(NgramMatcher, ChainContinuesTheMostRecentLongestMatch) {
  // "5 6 7" occurred twice; the last three tokens are "5 6 7" again.
  const std::vector<int32_t> tokens = {1, 5, 6, 7, 8, 9, 2, 5, 6, 7, 3, 4, 5, 6, 7};
  const Draft d = propose(tokens, Settings{1, 3, 1, 0}, 4);
  EXPECT_THAT(d.tokens, ElementsAre(3, 4, 5, 6)) << "the most recent occurrence";
  EXPECT_THAT(d.parents, ElementsAre(-1, 0, 1, 2));
}

TEST(NgramMatcher, LongerMatchesWinOverMoreRecentShorterOnes) {
  // The 3-gram "1 2 3" matched at the start is preferred to the later 1-gram "3".
  const std::vector<int32_t> tokens = {1, 2, 3, 40, 41, 3, 50, 1, 2, 3};
  EXPECT_THAT(propose(tokens, Settings{1, 3, 1, 0}, 2).tokens, ElementsAre(40, 41));
  EXPECT_THAT(propose(tokens, Settings{1, 1, 1, 0}, 2).tokens, ElementsAre(50, 1)) << "max_ngram 1: the last 3";
}

TEST(NgramMatcher, MinNgramIgnoresShorterMatches) {
  const std::vector<int32_t> tokens = {9, 4, 8, 7, 4};  // only a 1-gram match ("4")
  EXPECT_THAT(propose(tokens, Settings{1, 3, 1, 0}, 3).tokens, ElementsAre(8, 7, 4));
  EXPECT_TRUE(propose(tokens, Settings{2, 3, 1, 0}, 3).tokens.empty());
}

TEST(NgramMatcher, NoMatchMeansNoDraft) {
  EXPECT_TRUE(propose(std::vector<int32_t>{1, 2, 3, 4}, Settings{}, 5).tokens.empty());
  EXPECT_TRUE(propose(std::vector<int32_t>{7}, Settings{}, 5).tokens.empty());
}

TEST(NgramMatcher, SeveralMatchesMergeIntoATreeWithDistinctSiblings) {
  // After "a b": "c d" twice and "e" once; the trie shares "c".
  const std::vector<int32_t> tokens = {10, 11, 12, 13, 10, 11, 14, 10, 11, 12, 13, 99, 10, 11};
  const Draft d = propose(tokens, Settings{1, 2, 3, 0}, 8);
  ASSERT_EQ(d.tokens.size(), d.parents.size());
  std::set<std::pair<int32_t, int32_t>> siblings;
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    EXPECT_LT(d.parents[i], static_cast<int32_t>(i)) << "topological";
    EXPECT_TRUE(siblings.emplace(d.parents[i], d.tokens[i]).second) << "siblings are distinct";
  }
  std::vector<int32_t> roots;
  for (size_t i = 0; i < d.tokens.size(); ++i)
    if (d.parents[i] == -1) roots.push_back(d.tokens[i]);
  EXPECT_THAT(roots, ::testing::UnorderedElementsAre(12, 14)) << "two distinct continuations, the common one shared";
}

TEST(NgramMatcher, BudgetAndDepthAreRespected) {
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 1, 2};
  EXPECT_EQ(propose(tokens, Settings{1, 3, 1, 0}, 3).tokens.size(), 3u);
  EXPECT_EQ(propose(tokens, Settings{1, 3, 1, 2}, 8).tokens.size(), 2u) << "max_depth";
  EXPECT_TRUE(propose(tokens, Settings{1, 3, 1, 0}, 0).tokens.empty());
}

}  // namespace
}  // namespace drift::ngram
