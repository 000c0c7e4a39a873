#pragma once
// SuffixTree: the data structure of SuffixDecoding (arXiv 2411.04975). It holds every suffix of
// some token sequences, each cut to `max_depth` tokens, as a compressed trie: an edge carries a
// run of tokens, a node counts the suffix occurrences that reach it (its label's first token),
// and each node keeps its children ordered by count, so its most frequent continuation is its
// first child -- found in O(1).
//
// Sequences grow one token at a time (append). The suffixes ending at the new token -- at most
// max_depth of them -- each extend by one step from the node they ended at, so an append costs
// O(max_depth) and never walks from the root. A growing suffix always ends at a node's end: when
// it steps into a longer edge, the edge is split after that token. So every occurrence ends at a
// node boundary, and counts stay exact: a node's count minus its children's is the number of
// occurrences ending there. A leaf only one occurrence reaches grows in place instead, which
// keeps unique runs compressed. A sequence can be removed (each of its suffix occurrences
// uncounted, nodes no occurrence reaches deleted): the global tree evicts old responses so.
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace suffix {

struct Node {
  Node* parent = nullptr;
  std::vector<int32_t> label;                   // the edge's tokens from the parent (empty for the root)
  int64_t count = 0;                            // suffix occurrences reaching this node
  int64_t continued = 0;                        // of those, the ones going on into a child (its children's counts)
  int32_t depth = 0;                            // tokens from the root to the end of the label
  size_t rank = 0;                              // this node's index in parent->children
  std::vector<std::unique_ptr<Node>> children;  // by count, largest first
  // First label token -> child, kept once a node has many children (most have a few, and a scan
  // of those is faster than hashing).
  std::unique_ptr<std::unordered_map<int32_t, Node*>> index;
  static constexpr size_t kIndexFrom = 8;

  Node* child(int32_t token) const;
  // Occurrences that go on into a child: kept up to date, since a node can have thousands of
  // children and drafting asks at every step.
  int64_t continuations() const { return continued; }
};

// A place in the tree: `offset` tokens into `node`'s label (offset == label size: at its end).
struct Position {
  const Node* node = nullptr;
  size_t offset = 0;
  bool valid() const { return node != nullptr; }
  bool at_end() const { return offset == node->label.size(); }
};

class SuffixTree {
 public:
  explicit SuffixTree(int32_t max_depth);
  // Nodes point at their parents, the root included: a tree never moves.
  SuffixTree(const SuffixTree&) = delete;
  SuffixTree& operator=(const SuffixTree&) = delete;

  int32_t max_depth() const { return max_depth_; }
  const Node& root() const { return root_; }
  int64_t num_nodes() const { return num_nodes_; }
  size_t num_sequences() const { return sequences_.size(); }
  bool contains(int64_t seq) const { return sequences_.count(seq) > 0; }
  const std::vector<int32_t>* tokens(int64_t seq) const;

  // Appends `token` to sequence `seq` (a new sequence starts empty).
  void append(int64_t seq, int32_t token);
  void extend(int64_t seq, std::span<const int32_t> tokens);
  // Uncounts every suffix occurrence of `seq` and forgets the sequence; nodes no occurrence
  // reaches any more are deleted.
  void remove(int64_t seq);

  // Where `pattern` ends, walked from the root; an invalid position when the tree lacks it.
  Position find(std::span<const int32_t> pattern) const;
  // Where the suffixes of `seq` of length 1 .. max_depth - 1 end (index L - 1 for length L;
  // invalid past the sequence's length): the matches of the sequence's own context, for free.
  std::vector<Position> own_suffix_ends(int64_t seq) const;

  // Every invariant: parent links, depths, labels (non-empty; first token = the child's key),
  // children ordered by count with matching ranks, no path deeper than max_depth, and every
  // count equal to the number of suffix occurrences of the stored sequences that reach the node
  // (each walkable from the root). Returns "" or the first thing broken.
  std::string check_integrity() const;

 private:
  struct Sequence {
    std::vector<int32_t> tokens;
    // Where the suffixes still growing (shorter than max_depth) end, oldest (longest) first.
    std::deque<Node*> active;
  };
  Node* step(Node* at, int32_t token);
  Node* split_after_first(Node* child);
  void trade_places(Node* node, size_t to);
  void bump(Node* node);
  void lower(Node* node);
  void uncount(Node* node);
  void delete_node(Node* node);
  std::string check_node(const Node& node) const;

  int32_t max_depth_;
  Node root_;
  int64_t num_nodes_ = 1;
  std::unordered_map<int64_t, Sequence> sequences_;
};

}  // namespace suffix
