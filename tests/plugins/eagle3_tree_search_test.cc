// eagle3's TreeSearch alone (no head): the trees each shape proposes from given distributions --
// chains, EAGLE "choices" trees and EAGLE-2 dynamic trees -- against trees worked out by hand, and
// the invariants the host relies on (parents before children, distinct siblings, the budget).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tree_search.h"

namespace eagle3 {
namespace {

// A made-up draft: node n's k most likely children are tokens 10 * (n + 2) + r with the given probabilities.
struct Model {
  std::vector<float> probs;  // the same ranked probabilities at every node
  std::vector<int32_t> tokens(int32_t node, int32_t k) const {
    std::vector<int32_t> t;
    for (int32_t r = 0; r < k; ++r) t.push_back(10 * (node + 2) + r);
    return t;
  }
};

TreeSearch::Result grow(TreeSearch& search, const Model& m) {
  const int32_t k0 = search.root_width();
  search.add_root_children(m.tokens(-1, k0).data(), m.probs.data(), k0);
  for (std::vector<int32_t> level = search.next_expansions(); !level.empty(); level = search.next_expansions())
    for (int32_t node : level) {
      const int32_t k = search.width(node);
      search.add_children(node, m.tokens(node, k).data(), m.probs.data(), k);
    }
  return search.result();
}

void expect_valid(const TreeSearch::Result& r) {
  std::map<int32_t, std::set<int32_t>> siblings;
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    EXPECT_LT(r.parents[i], static_cast<int32_t>(i)) << "parent after child at node " << i;
    EXPECT_GE(r.parents[i], -1);
    EXPECT_TRUE(siblings[r.parents[i]].insert(r.tokens[i]).second) << "two siblings hold token " << r.tokens[i];
  }
}

TEST(Eagle3TreeSearch, ChainOfKFollowsTheMostLikelyTokenAndStopsAtTheBudget) {
  const Model m{{0.9f}};
  TreeShape chain;
  chain.kind = TreeKind::Chain;
  chain.depth = 4;
  TreeSearch search(chain, 8);
  const TreeSearch::Result r = grow(search, m);
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{10, 20, 30, 40}));  // root -> node 0 -> node 1 -> node 2
  EXPECT_EQ(r.parents, (std::vector<int32_t>{-1, 0, 1, 2}));
  TreeSearch small(chain, 2);
  EXPECT_EQ(grow(small, m).tokens.size(), 2u) << "a budget of 2 drafts 2 tokens and expands once";
}

TEST(Eagle3TreeSearch, StaticChoicesBuildExactlyThatTree) {
  const Model m{{0.5f, 0.3f, 0.2f}};
  TreeShape shape;
  shape.kind = TreeKind::Static;
  // Listed out of order on purpose: the search must put parents first.
  shape.choices = {{0, 0}, {0}, {1}, {0, 1}, {1, 0}, {0, 0, 0}};
  TreeSearch search(shape, 16);
  EXPECT_EQ(search.root_width(), 2);
  const TreeSearch::Result r = grow(search, m);
  expect_valid(r);
  // Depth 1: ranks 0 and 1 of the root (10, 11). Depth 2: under node 0 its ranks 0, 1 (20, 21);
  // under node 1 its rank 0 (30). Depth 3: under node 2 (token 20) its rank 0 (40).
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{10, 11, 20, 21, 30, 40}));
  EXPECT_EQ(r.parents, (std::vector<int32_t>{-1, -1, 0, 0, 1, 2}));
  EXPECT_FLOAT_EQ(r.probs[3], 0.3f);
}

TEST(Eagle3TreeSearch, ChoicesMustBeATree) {
  EXPECT_EQ(validate_choices({{0}, {1}, {0, 0}}), "");
  EXPECT_NE(validate_choices({{0}, {0, 1, 0}}), "") << "the prefix [0, 1] is missing";
  EXPECT_NE(validate_choices({{0}, {0}}), "");
  EXPECT_NE(validate_choices({{}}), "");
  EXPECT_NE(validate_choices({{-1}}), "");
}

TEST(Eagle3TreeSearch, DynamicTreeKeepsTheBestPathsByCumulativeProbability) {
  // Every node: 0.6 for its best child, 0.3 for the second.
  const Model m{{0.6f, 0.3f}};
  TreeShape shape;
  shape.kind = TreeKind::Dynamic;
  shape.depth = 3;
  shape.topk = 2;
  shape.num_nodes = 4;
  TreeSearch search(shape, 16);
  const TreeSearch::Result r = grow(search, m);
  expect_valid(r);
  ASSERT_EQ(r.tokens.size(), 4u);
  // Scores: a = 0.6, b = 0.3 (depth 1); aa = .36, ab = .18, ba = .18, bb = .09 (depth 2);
  // the frontier expands aa and one of ab/ba: aaa = .216, ... The best four: a, aa, b, aaa.
  std::multiset<double> kept;
  double product = 1.0;
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    product = r.probs[i];
    for (int32_t p = r.parents[i]; p >= 0; p = r.parents[p]) product *= r.probs[p];
    kept.insert(product);
  }
  EXPECT_NEAR(*kept.rbegin(), 0.6, 1e-6);
  EXPECT_NEAR(*kept.begin(), 0.216, 1e-6) << "the fourth best path is a-a-a (0.216), better than b-a (0.18)";
  EXPECT_EQ(std::count(r.parents.begin(), r.parents.end(), -1), 2) << "both depth-1 candidates are kept";
}

TEST(Eagle3TreeSearch, DynamicTreeRespectsTheBudgetAndExpandsTopkPerLevel) {
  const Model m{{0.4f, 0.3f, 0.2f, 0.1f}};
  TreeShape shape;
  shape.kind = TreeKind::Dynamic;
  shape.depth = 5;
  shape.topk = 3;
  TreeSearch search(shape, 10);
  const int32_t k0 = search.root_width();
  ASSERT_EQ(k0, 3);
  search.add_root_children(m.tokens(-1, k0).data(), m.probs.data(), k0);
  int levels = 0;
  for (std::vector<int32_t> level = search.next_expansions(); !level.empty(); level = search.next_expansions()) {
    EXPECT_EQ(level.size(), 3u) << "each level expands topk nodes";
    for (int32_t node : level) search.add_children(node, m.tokens(node, 3).data(), m.probs.data(), 3);
    ++levels;
  }
  EXPECT_EQ(levels, 4) << "depth 5 = the root's children plus 4 expansions";
  const TreeSearch::Result r = search.result();
  EXPECT_EQ(r.tokens.size(), 10u);
  expect_valid(r);
}

}  // namespace
}  // namespace eagle3
