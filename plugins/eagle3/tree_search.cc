#include "tree_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace eagle3 {

std::string validate_choices(const std::vector<std::vector<int32_t>>& choices) {
  std::set<std::vector<int32_t>> seen;
  for (const auto& path : choices) {
    if (path.empty()) return "a choice is empty (each is a path of child ranks, e.g. [0, 1])";
    for (int32_t r : path)
      if (r < 0) return "a choice holds a negative rank";
    if (!seen.insert(path).second) return "a choice appears twice";
  }
  for (const auto& path : choices)
    if (path.size() > 1 && !seen.count(std::vector<int32_t>(path.begin(), path.end() - 1)))
      return "a choice's parent path is missing (every prefix of a path must be a choice too)";
  return "";
}

TreeSearch::TreeSearch(const TreeShape& shape, int32_t budget) : shape_(shape), budget_(budget) {
  if (shape_.kind == TreeKind::Static)  // parents before children: shorter paths first, then as listed
    std::stable_sort(shape_.choices.begin(), shape_.choices.end(),
                     [](const auto& a, const auto& b) { return a.size() < b.size(); });
}

// Children a static node (or the root, choice -1) wants: one more than its largest child rank.
int32_t TreeSearch::choice_width(int32_t choice) const {
  const size_t depth = choice < 0 ? 0 : shape_.choices[choice].size();
  int32_t width = 0;
  for (const auto& path : shape_.choices) {
    if (path.size() != depth + 1) continue;
    if (choice >= 0 && !std::equal(path.begin(), path.end() - 1, shape_.choices[choice].begin())) continue;
    width = std::max(width, path.back() + 1);
  }
  return width;
}

int32_t TreeSearch::root_width() const {
  switch (shape_.kind) {
    case TreeKind::Chain:
      return 1;
    case TreeKind::Static:
      return choice_width(-1);
    case TreeKind::Dynamic:
      return shape_.topk;
  }
  return 1;
}

int32_t TreeSearch::width(int32_t node) const {
  switch (shape_.kind) {
    case TreeKind::Chain:
      return 1;
    case TreeKind::Static:
      return choice_width(nodes_[node].choice);
    case TreeKind::Dynamic:
      return shape_.topk;
  }
  return 1;
}

void TreeSearch::add_child(int32_t parent, int32_t token, float prob, int32_t choice) {
  DraftNode n;
  n.parent = parent;
  n.token = token;
  n.prob = prob;
  n.depth = parent < 0 ? 1 : nodes_[parent].depth + 1;
  n.score = (parent < 0 ? 0.0 : nodes_[parent].score) + std::log(std::max(prob, 1e-30f));
  n.choice = choice;
  newest_.push_back(static_cast<int32_t>(nodes_.size()));
  nodes_.push_back(n);
}

void TreeSearch::add_children(int32_t node, const int32_t* tokens, const float* probs, int32_t k) {
  const int32_t parent_choice = node < 0 ? -1 : nodes_[node].choice;
  const size_t depth = node < 0 ? 0 : static_cast<size_t>(nodes_[node].depth);
  for (int32_t r = 0; r < k && r < (node < 0 ? root_width() : width(node)); ++r) {
    int32_t choice = -1;
    if (shape_.kind == TreeKind::Static) {
      for (size_t c = 0; c < shape_.choices.size() && choice < 0; ++c) {
        const auto& path = shape_.choices[c];
        if (path.size() == depth + 1 && path.back() == r &&
            (parent_choice < 0 || std::equal(path.begin(), path.end() - 1, shape_.choices[parent_choice].begin())))
          choice = static_cast<int32_t>(c);
      }
      if (choice < 0) continue;  // this rank is not part of the tree
    }
    add_child(node, tokens[r], probs[r], choice);
  }
}

void TreeSearch::add_root_children(const int32_t* tokens, const float* probs, int32_t k) {
  newest_.clear();
  add_children(-1, tokens, probs, k);
}

std::vector<int32_t> TreeSearch::next_expansions() {
  std::vector<int32_t> expand;
  const int32_t levels = shape_.kind == TreeKind::Chain ? std::min(shape_.depth, budget_) : shape_.depth;
  if (newest_.empty()) return expand;
  if (shape_.kind != TreeKind::Static && level_ >= levels) return expand;
  if (shape_.kind == TreeKind::Dynamic) {
    expand = newest_;  // the best topk of the newest level, best first
    std::stable_sort(expand.begin(), expand.end(),
                     [&](int32_t a, int32_t b) { return nodes_[a].score > nodes_[b].score; });
    expand.resize(std::min<size_t>(expand.size(), static_cast<size_t>(shape_.topk)));
  } else {
    for (int32_t n : newest_)
      if (width(n) > 0) expand.push_back(n);
  }
  newest_.clear();  // the expansions' children make up the next level
  ++level_;
  return expand;
}

TreeSearch::Result TreeSearch::result() const {
  std::vector<int32_t> chosen(nodes_.size());
  std::iota(chosen.begin(), chosen.end(), 0);
  int32_t limit = budget_;
  if (shape_.kind == TreeKind::Dynamic) {
    if (shape_.num_nodes > 0) limit = std::min(limit, shape_.num_nodes);
    // Best first; ties keep creation order, so a parent (created first) precedes its children.
    std::stable_sort(chosen.begin(), chosen.end(),
                     [&](int32_t a, int32_t b) { return nodes_[a].score > nodes_[b].score; });
  }
  chosen.resize(std::min<size_t>(chosen.size(), static_cast<size_t>(std::max(limit, 0))));
  // Topological order: by depth, then creation.
  std::stable_sort(chosen.begin(), chosen.end(),
                   [&](int32_t a, int32_t b) { return nodes_[a].depth < nodes_[b].depth; });
  std::map<int32_t, int32_t> index;
  Result r;
  for (int32_t n : chosen) {
    const DraftNode& node = nodes_[n];
    const auto parent = node.parent < 0 ? index.end() : index.find(node.parent);
    if (node.parent >= 0 && parent == index.end()) continue;  // its parent did not make it
    index[n] = static_cast<int32_t>(r.tokens.size());
    r.tokens.push_back(node.token);
    r.parents.push_back(node.parent < 0 ? -1 : parent->second);
    r.probs.push_back(node.prob);
  }
  return r;
}

}  // namespace eagle3
