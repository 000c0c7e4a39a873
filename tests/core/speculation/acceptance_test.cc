// Acceptance on hand-built trees and logits. Greedy: the longest path whose tokens are the
// target's argmax, plus the bonus token. Sampling: over thousands of seeded runs the first tokens
// of speculative decoding are distributed as plain sampling's (chi-square homogeneity test),
// with top-k / top-p / min-p on, for chains and wide trees -- and the same test rejects two
// deliberately broken rules, so it can fail.
#include "core/speculation/acceptance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "core/sampler.h"

namespace drift {
namespace {

constexpr int64_t kVocab = 8;

// A row of logits whose argmax is `top` (and `second` next).
std::vector<float> row_with_argmax(int32_t top, int32_t second = -1) {
  std::vector<float> row(kVocab, 0.0f);
  row[top] = 5.0f;
  if (second >= 0) row[second] = 3.0f;
  return row;
}

std::vector<float> rows(const std::vector<std::vector<float>>& parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(AcceptanceGreedy, LongestMatchingPathAmongSiblingsPlusBonus) {
  // root -> {3: node0, 5: node1}; node0 -> {1: node2}; node1 -> {2: node3, 4: node4}.
  const DraftTree tree{{3, 5, 1, 2, 4}, {-1, -1, 0, 1, 1}};
  // The target prefers 5 at the root, 4 after it, then 7 (a leaf: 7 is the bonus).
  const auto logits = rows({row_with_argmax(5, 3), row_with_argmax(1), row_with_argmax(4), row_with_argmax(0),
                            row_with_argmax(0), row_with_argmax(7)});
  const AcceptedPath path = accept_draft(tree, logits.data(), kVocab, SamplingParams{}, 1, 0);
  EXPECT_EQ(path.nodes, (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(path.tokens, (std::vector<int32_t>{5, 4, 7}));
}

TEST(AcceptanceGreedy, MismatchAtTheRootGivesOnlyTheTargetsToken) {
  const DraftTree tree{{3, 5}, {-1, 0}};
  const auto logits = rows({row_with_argmax(6), row_with_argmax(5), row_with_argmax(1)});
  const AcceptedPath path = accept_draft(tree, logits.data(), kVocab, SamplingParams{}, 1, 0);
  EXPECT_TRUE(path.nodes.empty());
  EXPECT_EQ(path.tokens, std::vector<int32_t>{6});
}

TEST(AcceptanceGreedy, MismatchInsideAChainStopsThere) {
  const DraftTree chain{{3, 5, 2}, {-1, 0, 1}};
  const auto logits = rows({row_with_argmax(3), row_with_argmax(5), row_with_argmax(6), row_with_argmax(0)});
  const AcceptedPath path = accept_draft(chain, logits.data(), kVocab, SamplingParams{}, 1, 0);
  EXPECT_EQ(path.nodes, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(path.tokens, (std::vector<int32_t>{3, 5, 6}));  // 6 replaces the drafted 2
}

TEST(AcceptanceGreedy, EmptyTreeIsPlainDecoding) {
  const auto logits = row_with_argmax(2);
  EXPECT_EQ(accept_draft(DraftTree{}, logits.data(), kVocab, SamplingParams{}, 1, 0).tokens, std::vector<int32_t>{2});
}

// ---- sampling: a synthetic target and drafter over a small vocabulary ------------------------

constexpr int64_t kSmallVocab = 6;

// The target's logits after `context`: fixed pseudo-random values, different for every context.
std::vector<float> target_logits(const std::vector<int32_t>& context) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : context) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
  std::vector<float> row(kSmallVocab);
  for (int64_t v = 0; v < kSmallVocab; ++v) row[v] = static_cast<float>(4.0 * uniform_for(h, v) - 2.0);
  return row;
}

// The token ids of `row` ordered by logit, most likely first.
std::vector<int32_t> ranked(const std::vector<float>& row) {
  std::vector<int32_t> ids(row.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  return ids;
}

// Drafts `width` children per node, `depth` levels deep: the target's most likely tokens (so the
// children carry much of p's mass and a wrong rule shows), or its least likely ones.
DraftTree draft(const std::vector<int32_t>& context, int width, int depth, bool likely) {
  DraftTree tree;
  std::function<void(int32_t, std::vector<int32_t>, int)> grow = [&](int32_t parent, std::vector<int32_t> ctx, int level) {
    if (level == depth) return;
    std::vector<int32_t> order = ranked(target_logits(ctx));
    if (!likely) std::reverse(order.begin(), order.end());
    for (int c = 0; c < width; ++c) {
      tree.tokens.push_back(order[c]);
      tree.parents.push_back(parent);
      const int32_t node = static_cast<int32_t>(tree.size() - 1);
      std::vector<int32_t> child_ctx = ctx;
      child_ctx.push_back(order[c]);
      grow(node, child_ctx, level + 1);
    }
  };
  grow(-1, context, 0);
  return tree;
}

// What one verify forward returns: the target's row for the root and for every node.
std::vector<float> verify_logits(const DraftTree& tree, const std::vector<int32_t>& context) {
  std::vector<float> out = target_logits(context);
  for (size_t i = 0; i < tree.size(); ++i) {
    std::vector<int32_t> path;
    for (int32_t n = static_cast<int32_t>(i); n >= 0; n = tree.parents[n]) path.insert(path.begin(), tree.tokens[n]);
    std::vector<int32_t> ctx = context;
    ctx.insert(ctx.end(), path.begin(), path.end());
    const auto row = target_logits(ctx);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

using AcceptRule = std::function<std::vector<int32_t>(const DraftTree&, const float*, const SamplingParams&, uint64_t,
                                                      uint64_t)>;

std::vector<int32_t> correct_rule(const DraftTree& tree, const float* logits, const SamplingParams& p, uint64_t seed,
                                  uint64_t index) {
  return accept_draft(tree, logits, kSmallVocab, p, seed, index).tokens;
}

// Broken: every drafted first child is accepted whatever the target says; the bonus comes from p.
std::vector<int32_t> accept_any_child(const DraftTree& tree, const float* logits, const SamplingParams& p,
                                      uint64_t seed, uint64_t index) {
  std::vector<int32_t> tokens;
  int32_t node = -1;
  for (int32_t child; (child = [&] {
         for (size_t i = 0; i < tree.size(); ++i)
           if (tree.parents[i] == node) return static_cast<int32_t>(i);
         return -1;
       }()) >= 0;) {
    tokens.push_back(tree.tokens[child]);
    node = child;
  }
  tokens.push_back(sample_token(logits + (node + 1) * kSmallVocab, kSmallVocab, p, seed, index + tokens.size()));
  return tokens;
}

// Broken: on a mismatch the bonus token is drawn afresh from p, without excluding the children
// just rejected.
std::vector<int32_t> bonus_from_unrestricted_p(const DraftTree& tree, const float* logits, const SamplingParams& p,
                                               uint64_t seed, uint64_t index) {
  std::vector<int32_t> tokens;
  int32_t node = -1;
  for (;; ++index) {
    const float* row = logits + (node + 1) * kSmallVocab;
    const int32_t token = sample_token(row, kSmallVocab, p, seed, index);
    const int32_t child = tree.child_with_token(node, token);
    if (child < 0) {
      tokens.push_back(sample_token(row, kSmallVocab, p, seed ^ 0x5bd1e995u, index));
      return tokens;
    }
    tokens.push_back(token);
    node = child;
  }
}

constexpr int kTokensCompared = 3;

// The first kTokensCompared tokens of one seeded run, as one category.
int plain_run(const SamplingParams& p, uint64_t seed) {
  std::vector<int32_t> context = {0};
  int category = 0;
  for (int i = 0; i < kTokensCompared; ++i) {
    const int32_t t = sample_token(target_logits(context).data(), kSmallVocab, p, seed, i);
    context.push_back(t);
    category = category * kSmallVocab + t;
  }
  return category;
}

int speculative_run(const SamplingParams& p, uint64_t seed, int width, int depth, bool likely, const AcceptRule& rule) {
  std::vector<int32_t> context = {0};
  std::vector<int32_t> out;
  while (out.size() < kTokensCompared) {
    const DraftTree tree = draft(context, width, depth, likely);
    const auto logits = verify_logits(tree, context);
    for (int32_t t : rule(tree, logits.data(), p, seed, out.size())) {
      out.push_back(t);
      context.push_back(t);
    }
  }
  int category = 0;
  for (int i = 0; i < kTokensCompared; ++i) category = category * kSmallVocab + out[i];
  return category;
}

struct ChiSquare {
  double statistic = 0;
  int df = 0;
  // Upper 0.001 quantile of chi-square(df), Wilson-Hilferty approximation.
  double critical() const {
    const double z = 3.090, k = df;
    return k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
  }
};

// Chi-square test of homogeneity of two samples of equal size; categories with fewer than 10
// observations in both together are pooled.
ChiSquare homogeneity(const std::map<int, int>& a, const std::map<int, int>& b) {
  std::map<int, std::pair<double, double>> cells;
  for (const auto& [k, n] : a) cells[k].first += n;
  for (const auto& [k, n] : b) cells[k].second += n;
  std::vector<std::pair<double, double>> pooled;
  std::pair<double, double> rest{0, 0};
  for (const auto& [k, c] : cells) {
    if (c.first + c.second < 10) {
      rest.first += c.first;
      rest.second += c.second;
    } else {
      pooled.push_back(c);
    }
  }
  if (rest.first + rest.second > 0) pooled.push_back(rest);
  ChiSquare result;
  for (const auto& [x, y] : pooled) {
    const double expected = (x + y) / 2;  // equal sample sizes
    result.statistic += (x - expected) * (x - expected) / expected + (y - expected) * (y - expected) / expected;
  }
  result.df = static_cast<int>(pooled.size()) - 1;
  return result;
}

constexpr int kRuns = 20000;

ChiSquare compare(const SamplingParams& p, int width, int depth, bool likely, const AcceptRule& rule) {
  std::map<int, int> plain, speculative;
  // Independent seeds for the two samples: the test compares distributions, not runs.
  for (int s = 0; s < kRuns; ++s) {
    plain[plain_run(p, 1'000'000 + s)]++;
    speculative[speculative_run(p, 7'000'000 + s, width, depth, likely, rule)]++;
  }
  return homogeneity(plain, speculative);
}

struct Shape {
  const char* name;
  int width, depth;
  bool likely;
};
const Shape kShapes[] = {{"chain", 1, 4, true}, {"wide tree", 3, 2, true}, {"unlikely wide tree", 2, 2, false}};

SamplingParams params(double temperature, int64_t top_k, double top_p, double min_p) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  return p;
}

TEST(AcceptanceSampling, SpeculativeTokensAreDistributedAsPlainSampling) {
  const SamplingParams variants[] = {params(1.0, 0, 1.0, 0.0), params(0.8, 4, 1.0, 0.0), params(1.2, 0, 0.9, 0.0),
                                     params(1.0, 0, 1.0, 0.1)};
  for (const SamplingParams& p : variants) {
    for (const Shape& shape : kShapes) {
      const ChiSquare chi = compare(p, shape.width, shape.depth, shape.likely, correct_rule);
      EXPECT_LT(chi.statistic, chi.critical()) << shape.name << " T=" << p.temperature << " top_k=" << p.top_k
                                               << " top_p=" << p.top_p << " min_p=" << p.min_p << " df=" << chi.df;
      std::printf("chi-square (df %d, critical %.1f at 0.001), %s, T=%.1f top_k=%ld top_p=%.1f min_p=%.1f: %.1f\n",
                  chi.df, chi.critical(), shape.name, p.temperature, static_cast<long>(p.top_k), p.top_p, p.min_p,
                  chi.statistic);
    }
  }
}

// Stronger than equal distributions: the draw at each output index is the one plain decoding
// makes, so per seed a speculative run commits exactly the plain run's tokens, whatever the tree.
TEST(AcceptanceSampling, EachSeedCommitsThePlainRunsTokens) {
  const SamplingParams variants[] = {params(0.0, 0, 1.0, 0.0), params(1.0, 0, 1.0, 0.0), params(0.8, 4, 0.9, 0.05)};
  for (const SamplingParams& p : variants)
    for (const Shape& shape : kShapes)
      for (uint64_t seed = 0; seed < 500; ++seed)
        ASSERT_EQ(speculative_run(p, seed, shape.width, shape.depth, shape.likely, correct_rule), plain_run(p, seed))
            << shape.name << " seed " << seed << " T=" << p.temperature;
}

TEST(AcceptanceSampling, TheTestRejectsBrokenRules) {
  const SamplingParams p = params(1.0, 0, 1.0, 0.0);
  for (const Shape& shape : {kShapes[0], kShapes[1]}) {
    const ChiSquare any_child = compare(p, shape.width, shape.depth, shape.likely, accept_any_child);
    EXPECT_GT(any_child.statistic, any_child.critical()) << "accepting any drafted child passed, " << shape.name;
    const ChiSquare unrestricted = compare(p, shape.width, shape.depth, shape.likely, bonus_from_unrestricted_p);
    EXPECT_GT(unrestricted.statistic, unrestricted.critical())
        << "a bonus token from unrestricted p passed, " << shape.name;
    std::printf("chi-square (df %d, critical %.1f at 0.001), %s: accept-any-child %.1f, unrestricted bonus %.1f\n",
                any_child.df, any_child.critical(), shape.name, any_child.statistic, unrestricted.statistic);
  }
}

}  // namespace
}  // namespace drift
