// Draft tree validation: every malformed tree a plugin could hand over is named, so the engine can
// fall back for that request with one [fallback] line instead of verifying garbage.
#include "core/speculation/draft_tree.h"

#include <gtest/gtest.h>

namespace drift {
namespace {

const DraftLimits kLimits{.vocab_size = 10, .max_nodes = 6, .max_depth = 3};

TEST(DraftTree, ValidTreesPass) {
  EXPECT_EQ(validate_draft_tree(DraftTree{}, kLimits), "");
  // Two root children with a child each, a repeated token under different parents is fine.
  const DraftTree tree{{3, 5, 3, 3}, {-1, -1, 0, 1}};
  EXPECT_EQ(validate_draft_tree(tree, kLimits), "");
  EXPECT_EQ(tree.depths(), (std::vector<int32_t>{1, 1, 2, 2}));
  EXPECT_EQ(tree.child_with_token(-1, 5), 1);
  EXPECT_EQ(tree.child_with_token(1, 3), 3);
  EXPECT_EQ(tree.child_with_token(0, 5), -1);
}

TEST(DraftTree, EveryMalformedTreeIsNamed) {
  const std::vector<std::pair<DraftTree, std::string>> cases = {
      {{{1, 2}, {-1}}, "the tree has 2 tokens but 1 parents"},
      {{{1, 2}, {-1, 1}}, "node 1 has parent 1 (parents must be -1 or an earlier node)"},
      {{{1, 2}, {-1, 5}}, "node 1 has parent 5"},
      {{{1}, {-2}}, "node 0 has parent -2"},
      {{{1, 10}, {-1, 0}}, "node 1 has token 10, outside the vocabulary [0, 10)"},
      {{{-1}, {-1}}, "node 0 has token -1, outside the vocabulary"},
      {{{4, 4}, {-1, -1}}, "node 1 repeats token 4 among the children of node -1"},
      {{{1, 2, 3, 4, 5, 6, 7}, {-1, 0, 1, 2, 3, 4, 5}}, "the tree has 7 nodes, over the budget of 6"},
      {{{1, 2, 3, 4}, {-1, 0, 1, 2}}, "node 3 is at depth 4, over the limit of 3"},
  };
  for (const auto& [tree, reason] : cases)
    EXPECT_NE(validate_draft_tree(tree, kLimits).find(reason), std::string::npos)
        << reason << " / got: " << validate_draft_tree(tree, kLimits);
}

}  // namespace
}  // namespace drift
