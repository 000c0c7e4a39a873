#include "core/speculation/draft_tree.h"

#include <algorithm>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace drift {

std::vector<int32_t> DraftTree::depths() const {
  std::vector<int32_t> depth(size());
  for (size_t i = 0; i < size(); ++i) depth[i] = parents[i] < 0 ? 1 : depth[parents[i]] + 1;
  return depth;
}

int32_t DraftTree::child_with_token(int32_t node, int32_t token) const {
  for (size_t i = 0; i < size(); ++i)
    if (parents[i] == node && tokens[i] == token) return static_cast<int32_t>(i);
  return -1;
}

std::string validate_draft_tree(const DraftTree& tree, const DraftLimits& limits) {
  const int64_t n = static_cast<int64_t>(tree.tokens.size());
  if (tree.parents.size() != tree.tokens.size())
    return fmt::format("the tree has {} tokens but {} parents", tree.tokens.size(), tree.parents.size());
  if (n > limits.max_nodes) return fmt::format("the tree has {} nodes, over the budget of {}", n, limits.max_nodes);
  std::set<std::pair<int32_t, int32_t>> siblings;  // (parent, token)
  std::vector<int32_t> depth(n);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t parent = tree.parents[i], token = tree.tokens[i];
    if (parent < -1 || parent >= i)
      return fmt::format("node {} has parent {} (parents must be -1 or an earlier node)", i, parent);
    if (token < 0 || token >= limits.vocab_size)
      return fmt::format("node {} has token {}, outside the vocabulary [0, {})", i, token, limits.vocab_size);
    if (!siblings.emplace(parent, token).second)
      return fmt::format("node {} repeats token {} among the children of node {}", i, token, parent);
    depth[i] = parent < 0 ? 1 : depth[parent] + 1;
    if (limits.max_depth > 0 && depth[i] > limits.max_depth)
      return fmt::format("node {} is at depth {}, over the limit of {}", i, depth[i], limits.max_depth);
  }
  return "";
}

}  // namespace drift

namespace drift {

DraftTree limit_depth(const DraftTree& tree, int32_t max_depth) {
  const std::vector<int32_t> depth = tree.depths();
  std::vector<bool> keep(tree.size());
  for (size_t i = 0; i < tree.size(); ++i) keep[i] = depth[i] <= max_depth;
  return keep_nodes(tree, keep);
}

DraftTree keep_nodes(const DraftTree& tree, const std::vector<bool>& keep) {
  std::vector<int32_t> renumbered(tree.size(), -1);
  DraftTree out;
  for (size_t i = 0; i < tree.size(); ++i) {
    if (!keep[i] || (tree.parents[i] >= 0 && renumbered[tree.parents[i]] < 0)) continue;
    renumbered[i] = static_cast<int32_t>(out.size());
    out.tokens.push_back(tree.tokens[i]);
    out.parents.push_back(tree.parents[i] < 0 ? -1 : renumbered[tree.parents[i]]);
    if (!tree.probs.empty()) out.probs.push_back(tree.probs[i]);
  }
  return out;
}

std::vector<uint64_t> ancestor_mask(const DraftTree& tree, int64_t words) {
  std::vector<uint64_t> mask(tree.size() * words, 0);
  for (size_t i = 0; i < tree.size(); ++i) {
    uint64_t* row = &mask[i * words];
    if (tree.parents[i] >= 0) std::copy_n(&mask[tree.parents[i] * words], words, row);  // parents come first
    row[i / 64] |= uint64_t{1} << (i % 64);
  }
  return mask;
}

}  // namespace drift
