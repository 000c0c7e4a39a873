// suffix_cache's suffix tree and drafts alone, against brute force over the stored sequences:
// the continuation counts of any context, the chain's and the tree's tokens and probabilities,
// and check_integrity() after every one of thousands of random appends, removals and drafts.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "draft.h"
#include "suffix_tree.h"

namespace suffix {
namespace {

using Tokens = std::vector<int32_t>;

// What followed `pattern` in the stored suffixes (each sequence's suffixes cut to max_depth):
// token -> occurrences, counted by brute force.
std::map<int32_t, int64_t> brute_continuations(const std::map<int64_t, Tokens>& seqs, const Tokens& pattern,
                                               int32_t max_depth) {
  std::map<int32_t, int64_t> next;
  for (const auto& [id, t] : seqs)
    for (size_t start = 0; start < t.size(); ++start) {
      const size_t length = std::min<size_t>(max_depth, t.size() - start);
      if (length <= pattern.size()) continue;
      if (std::equal(pattern.begin(), pattern.end(), t.begin() + static_cast<int64_t>(start)))
        next[t[start + pattern.size()]]++;
    }
  return next;
}

TEST(SuffixTree, CountsAndDraftsOfASmallSequence) {
  SuffixTree tree(4);
  tree.extend(1, Tokens{1, 2, 3, 1, 2, 4, 1, 2, 3});
  ASSERT_EQ(tree.check_integrity(), "");
  const Position ab = tree.find(Tokens{1, 2});
  ASSERT_TRUE(ab.valid());
  ASSERT_TRUE(ab.at_end()) << "occurrences end at node boundaries, and [1 2] is followed by 3 and 4";
  EXPECT_EQ(ab.node->count, 3);
  EXPECT_EQ(ab.node->continuations(), 3);  // 1 2 3 (twice, once cut at max_depth), 1 2 4
  ASSERT_EQ(ab.node->children.size(), 2u);
  EXPECT_EQ(ab.node->children[0]->label.front(), 3) << "the most frequent continuation first";
  DraftParams chain;
  chain.min_token_prob = 0.0;
  const Draft d = draft_from(ab, 3, chain);
  ASSERT_EQ(d.tokens, (Tokens{3, 1})) << "3 (2 of 3), then 1; max_depth 4 allows no more after [1 2]";
  EXPECT_NEAR(d.probs[0], 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(d.probs[1], 1.0, 1e-6) << "of the occurrences of [1 2 3] that went on, all went to 1";
  EXPECT_EQ(tree.find(Tokens{2, 4, 1, 2}).valid(), true);
  EXPECT_EQ(tree.find(Tokens{4, 3}).valid(), false);
  EXPECT_EQ(tree.find(Tokens{1, 2, 3, 1, 2}).valid(), false) << "deeper than max_depth";
}

// min_token_prob bounds the path probability (the product along the path), not each token's
// own: SuffixDecoding's tau, as ArcticInference applies it.
TEST(SuffixTree, MinTokenProbBoundsThePathProbability) {
  SuffixTree tree(8);
  tree.extend(1, Tokens{1, 2, 3});
  tree.extend(2, Tokens{1, 2, 4});
  tree.extend(3, Tokens{1, 5, 3});
  const Position at = tree.find(Tokens{1});
  DraftParams p;
  p.min_token_prob = 0.4;
  EXPECT_EQ(draft_from(at, 8, p).tokens, (Tokens{2})) << "2 at 2/3, then 3 at 1/2 of that: 1/3 < 0.4";
  p.tree = true;
  EXPECT_EQ(draft_from(at, 8, p).tokens, (Tokens{2})) << "5 (1/3), 2 3 and 2 4 (1/3 each) are all below 0.4";
  p.min_token_prob = 0.3;
  const Draft wide = draft_from(at, 8, p);
  EXPECT_EQ(wide.tokens.size(), 5u) << "2, then 3, 4, 5 and 5's 3, each path 1/3";
  EXPECT_NEAR(wide.score, 2.0 / 3.0 + 4.0 / 3.0, 1e-6);
}

TEST(SuffixTree, DraftsFollowTheirParameters) {
  SuffixTree tree(8);
  tree.extend(1, Tokens{5, 6, 7, 8, 9});
  tree.extend(2, Tokens{5, 6, 7, 1, 2});
  tree.extend(3, Tokens{5, 6, 7, 8, 9});
  const Position at = tree.find(Tokens{5, 6});
  DraftParams p;
  p.min_token_prob = 0.5;
  const Draft chain = draft_from(at, 8, p);
  EXPECT_EQ(chain.tokens, (Tokens{7, 8, 9})) << "7 certain, then 8 at 2/3; the chain stops where the text ends";
  EXPECT_EQ(chain.parents, (std::vector<int32_t>{-1, 0, 1}));
  EXPECT_NEAR(chain.score, 1.0 + 2.0 / 3.0 + 2.0 / 3.0, 1e-6);
  p.min_token_prob = 0.9;
  EXPECT_EQ(draft_from(at, 8, p).tokens, (Tokens{7})) << "8 (2/3) is below min_token_prob";
  p.min_token_prob = 0.1;
  p.tree = true;
  const Draft tree_draft = draft_from(at, 5, p);
  ASSERT_EQ(tree_draft.tokens.size(), 5u);
  EXPECT_EQ(tree_draft.tokens[0], 7);
  // Best-first by path probability: 8 (2/3) and 9 (2/3) before 1 (1/3) and 2 (1/3).
  EXPECT_EQ(tree_draft.tokens[1], 8);
  EXPECT_EQ(tree_draft.tokens[2], 9);
  EXPECT_EQ(tree_draft.tokens[3], 1);
  EXPECT_EQ(tree_draft.parents[3], 0) << "1 is 7's other child";
  // A match of L tokens drafts at most alpha * L + beta.
  DraftParams scaled;
  scaled.alpha = 1.0;
  scaled.beta = 0.0;
  scaled.min_token_prob = 0.0;
  std::vector<Position> matches = {tree.find(Tokens{6}), {}};
  const Draft short_match = best_draft(matches, scaled, 16);
  EXPECT_EQ(short_match.tokens.size(), 1u);
  EXPECT_EQ(short_match.match_length, 1);
  EXPECT_EQ(best_draft(matches, scaled, 0).tokens.size(), 0u) << "the engine's budget caps it too";
}

TEST(SuffixTree, OwnSuffixEndsAreTheContextsMatches) {
  SuffixTree tree(6);
  const Tokens t = {3, 1, 4, 1, 5, 9, 2, 6};
  tree.extend(7, t);
  const std::vector<Position> ends = tree.own_suffix_ends(7);
  ASSERT_EQ(ends.size(), 5u);
  for (size_t length = 1; length <= 5; ++length) {
    const Position want = tree.find(Tokens(t.end() - static_cast<int64_t>(length), t.end()));
    ASSERT_TRUE(ends[length - 1].valid());
    EXPECT_EQ(ends[length - 1].node, want.node) << length;
    EXPECT_EQ(ends[length - 1].offset, want.offset) << length;
  }
}

TEST(SuffixTree, RemovingEverySequenceLeavesAnEmptyTree) {
  SuffixTree tree(5);
  tree.extend(1, Tokens{1, 2, 1, 2, 1});
  tree.extend(2, Tokens{2, 1, 2, 3});
  tree.remove(1);
  ASSERT_EQ(tree.check_integrity(), "");
  EXPECT_FALSE(tree.find(Tokens{1, 2, 1}).valid());
  EXPECT_TRUE(tree.find(Tokens{2, 1, 2, 3}).valid());
  tree.remove(2);
  ASSERT_EQ(tree.check_integrity(), "");
  EXPECT_EQ(tree.num_nodes(), 1);
  EXPECT_EQ(tree.root().count, 0);
}

// Thousands of random operations on a small vocabulary (much sharing, many splits): the
// invariants after each, and drafts against brute-force continuation counts.
TEST(SuffixTree, RandomOperationsKeepEveryInvariant) {
  std::mt19937 rng(1234);
  for (int32_t max_depth : {1, 3, 8}) {
    SuffixTree tree(max_depth);
    std::map<int64_t, Tokens> seqs;
    int64_t next_id = 0;
    for (int op = 0; op < 3000; ++op) {
      const int kind = std::uniform_int_distribution<int>(0, 19)(rng);
      if (kind == 0 && !seqs.empty()) {  // remove a random sequence
        auto it = std::next(seqs.begin(), std::uniform_int_distribution<size_t>(0, seqs.size() - 1)(rng));
        tree.remove(it->first);
        seqs.erase(it);
      } else if (kind <= 2 || seqs.empty()) {  // a new sequence
        seqs[next_id++];
      } else {  // append a burst to a random sequence (repeating its own recent tokens half the time)
        auto it = std::next(seqs.begin(), std::uniform_int_distribution<size_t>(0, seqs.size() - 1)(rng));
        for (int n = std::uniform_int_distribution<int>(1, 6)(rng); n > 0; --n) {
          Tokens& t = it->second;
          const bool repeat = t.size() > 3 && rng() % 2 == 0;
          const int32_t token = repeat ? t[t.size() - 3] : std::uniform_int_distribution<int32_t>(0, 4)(rng);
          t.push_back(token);
          tree.append(it->first, token);
        }
      }
      ASSERT_EQ(tree.check_integrity(), "") << "after operation " << op << ", max_depth " << max_depth;
      // A random context: what the tree says follows it is what brute force counts.
      Tokens pattern;
      for (int n = std::uniform_int_distribution<int>(0, max_depth - 1)(rng); n > 0; --n)
        pattern.push_back(std::uniform_int_distribution<int32_t>(0, 4)(rng));
      const auto want = brute_continuations(seqs, pattern, max_depth);
      const Position at = tree.find(pattern);
      if (want.empty()) {
        if (at.valid()) {
          EXPECT_TRUE(at.at_end() && at.node->children.empty()) << "a match with continuations brute force lacks";
        }
        continue;
      }
      ASSERT_TRUE(at.valid()) << "operation " << op;
      DraftParams p;
      p.min_token_prob = 0.0;
      const Draft d = draft_from(at, 1, p);
      ASSERT_EQ(d.tokens.size(), 1u);
      int64_t total = 0, best = 0;
      for (const auto& [token, n] : want) {
        total += n;
        best = std::max(best, n);
      }
      EXPECT_EQ(want.at(d.tokens[0]), best) << "the chain takes a most frequent continuation";
      EXPECT_NEAR(d.probs[0], static_cast<double>(best) / static_cast<double>(total), 1e-6);
    }
  }
}

}  // namespace
}  // namespace suffix
