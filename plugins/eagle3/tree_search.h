#pragma once
// TreeSearch: which draft tokens to propose, as a tree, from the draft head's distributions --
// pure host logic, independent of the head (tests drive it with made-up distributions).
//
// The root is the sequence's last committed token; its children come from the distribution the
// draft computed when it last extended over committed positions. Each further draft forward
// "expands" some nodes (runs the head on them) and gets each one's top-k children. Shapes:
//  - chain (depth k): expand the newest node k-1 times, one child each: k tokens.
//  - static (EAGLE "choices"): a fixed tree of child ranks, e.g. [[0], [1], [0, 0]] = the two
//    most likely tokens, and the most likely one after the first.
//  - dynamic (EAGLE-2/3): children are scored by cumulative log-probability; each step expands
//    the `topk` best nodes of the newest level (topk children each), for `depth` levels; then
//    the best `num_nodes` of everything generated are verified. Scores only fall along a path,
//    so the best nodes always include their parents.
#include <cstdint>
#include <string>
#include <vector>

namespace eagle3 {

enum class TreeKind { Chain, Static, Dynamic };

struct TreeShape {
  TreeKind kind = TreeKind::Chain;
  int32_t depth = 4;                          // chain length / levels of a dynamic tree
  int32_t topk = 4;                           // dynamic: children per expanded node and nodes expanded per level
  int32_t num_nodes = 0;                      // dynamic: nodes verified (0 = as many as the budget allows)
  std::vector<std::vector<int32_t>> choices;  // static: each node's path of child ranks
};

// The choices must name every prefix of every path, with ranks >= 0 and no path twice; returns
// why not, or "".
std::string validate_choices(const std::vector<std::vector<int32_t>>& choices);

struct DraftNode {
  int32_t parent = -1;  // index into nodes(), -1 = the root
  int32_t token = 0;    // target id
  float prob = 0.0f;    // draft probability given the parent
  double score = 0.0;   // sum of log-probabilities from the root
  int32_t depth = 1;
  int32_t choice = -1;  // static: index into choices
};

class TreeSearch {
 public:
  TreeSearch(const TreeShape& shape, int32_t budget);

  // How many children the root wants (the top-k the draft must report for it).
  int32_t root_width() const;
  void add_root_children(const int32_t* tokens, const float* probs, int32_t k);
  // The nodes to run the head on next (expansions), in order; empty when the tree is complete.
  std::vector<int32_t> next_expansions();
  int32_t width(int32_t node) const;  // children node wants
  void add_children(int32_t node, const int32_t* tokens, const float* probs, int32_t k);

  const std::vector<DraftNode>& nodes() const { return nodes_; }
  // The tree to propose, topologically ordered: tokens, parents (indices into it), probabilities.
  struct Result {
    std::vector<int32_t> tokens, parents;
    std::vector<float> probs;
  };
  Result result() const;

 private:
  void add_child(int32_t parent, int32_t token, float prob, int32_t choice);
  int32_t choice_width(int32_t choice) const;

  TreeShape shape_;
  int32_t budget_;
  std::vector<DraftNode> nodes_;
  int32_t level_ = 1;            // deepest level generated
  std::vector<int32_t> newest_;  // nodes of that level (children added since the last expansion)
};

}  // namespace eagle3
