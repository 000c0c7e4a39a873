#pragma once
// DraftTree: the candidate continuations a draft provider proposes for one sequence, as the
// engine keeps them once validated. Node i holds token tokens[i]; parents[i] is its parent node,
// or -1 for a child of the root (the sequence's last committed token). Nodes are topological
// (parents[i] < i) and siblings hold distinct tokens, so at each position the target's choice
// matches at most one child. A chain is the tree whose node i has parent i - 1.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace drift {

struct DraftTree {
  DraftTree() = default;
  DraftTree(std::vector<int32_t> node_tokens, std::vector<int32_t> node_parents, std::vector<float> node_probs = {})
      : tokens(std::move(node_tokens)), parents(std::move(node_parents)), probs(std::move(node_probs)) {}

  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;
  std::vector<float> probs;  // the provider's draft probability per node, when it gave them

  size_t size() const { return tokens.size(); }
  bool empty() const { return tokens.empty(); }
  // Depth of each node: 1 for the root's children (their position is the root's + depth).
  std::vector<int32_t> depths() const;
  // The child of `node` (-1: the root) that holds `token`, or -1.
  int32_t child_with_token(int32_t node, int32_t token) const;
};

struct DraftLimits {
  int64_t vocab_size = 0;
  int64_t max_nodes = 0;  // the sequence's draft budget
  int64_t max_depth = 0;  // 0: no limit beyond max_nodes
};

// "" when `tree` may be verified under `limits`; otherwise why not (parents out of range or not
// topological, a token outside the vocabulary, duplicate sibling tokens, too many nodes or too
// deep), phrased for the [fallback] line that disables speculation for the request.
std::string validate_draft_tree(const DraftTree& tree, const DraftLimits& limits);

}  // namespace drift

namespace drift {

// The tree without its nodes deeper than `max_depth` (their descendants are deeper still), parents
// renumbered. Used to fit a draft to what the request can still commit.
DraftTree limit_depth(const DraftTree& tree, int32_t max_depth);
// The tree with only the nodes `keep` marks whose ancestors are all kept, parents renumbered.
DraftTree keep_nodes(const DraftTree& tree, const std::vector<bool>& keep);

// Tree-attention mask rows for the verify forward: `words` 64-bit words per node, bit j of node
// i's row set when node j is node i or one of its ancestors (what node i may attend to among
// the tree's slots). words >= (size() + 63) / 64.
std::vector<uint64_t> ancestor_mask(const DraftTree& tree, int64_t words);

}  // namespace drift
