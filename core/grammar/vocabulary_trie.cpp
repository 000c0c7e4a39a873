#include "core/grammar/vocabulary_trie.h"

#include <algorithm>
#include <numeric>

namespace drift::grammar {

VocabularyTrie::VocabularyTrie(const std::vector<std::optional<std::string>>& token_bytes) : bytes_(token_bytes) {
  // Insert into a pointer-style trie, then flatten into contiguous nodes and edges.
  struct Building {
    std::vector<std::pair<uint8_t, int32_t>> children;
    std::vector<int32_t> tokens;
  };
  std::vector<Building> build(1);
  for (size_t id = 0; id < bytes_.size(); ++id) {
    if (!bytes_[id] || bytes_[id]->empty()) continue;
    int32_t at = 0;
    for (char c : *bytes_[id]) {
      const auto b = static_cast<uint8_t>(c);
      auto& kids = build[at].children;
      auto it = std::find_if(kids.begin(), kids.end(), [&](auto& kid) { return kid.first == b; });
      if (it != kids.end()) {
        at = it->second;
        continue;
      }
      const auto next = static_cast<int32_t>(build.size());
      kids.emplace_back(b, next);
      build.emplace_back();
      at = next;
    }
    build[at].tokens.push_back(static_cast<int32_t>(id));
  }
  // Breadth-first ids: a node's children are neighbours, so a mask's walk reads them together.
  std::vector<int32_t> order{0}, flat_id(build.size(), -1);
  flat_id[0] = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    auto& kids = build[order[i]].children;
    std::sort(kids.begin(), kids.end());
    for (auto& kid : kids) {
      flat_id[kid.second] = static_cast<int32_t>(order.size());
      order.push_back(kid.second);
    }
  }
  nodes_.resize(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const Building& b = build[order[i]];
    Node& n = nodes_[i];
    n.first_edge = static_cast<int32_t>(edges_.size());
    n.num_edges = static_cast<int32_t>(b.children.size());
    for (auto& kid : b.children) edges_.push_back({kid.first, flat_id[kid.second]});
  }
  // Tokens depth first (pre-order): each subtree's tokens are one range.
  std::vector<int32_t> stack{0};
  while (!stack.empty()) {
    const int32_t at = stack.back();
    stack.pop_back();
    const std::vector<int32_t>& here = build[order[at]].tokens;
    Node& n = nodes_[at];
    n.first_token = static_cast<int32_t>(tokens_.size());
    n.num_tokens = static_cast<int32_t>(here.size());
    tokens_.insert(tokens_.end(), here.begin(), here.end());
    for (int32_t e = n.first_edge + n.num_edges - 1; e >= n.first_edge; --e) stack.push_back(edges_[e].child);
  }
  summarize_subtrees();
}

// Children come after their parent (breadth first), so one backward pass sees every subtree
// whole; a subtree's tokens start at its root's first_token (depth first).
void VocabularyTrie::summarize_subtrees() {
  for (auto i = static_cast<int32_t>(nodes_.size()) - 1; i >= 0; --i) {
    Node& n = nodes_[i];
    n.subtree_end = n.first_token + n.num_tokens;
    n.plain_height = n.num_edges > 0 ? 0 : -1;
    for (int32_t e = n.first_edge; e < n.first_edge + n.num_edges; ++e) {
      const Node& child = nodes_[edges_[e].child];
      n.subtree_end = std::max(n.subtree_end, child.subtree_end);
      const bool plain =
          n.plain_height >= 0 && is_plain(edges_[e].byte) && (child.num_edges == 0 || child.plain_height >= 0);
      n.plain_height = plain ? std::max(n.plain_height, 1 + std::max(child.plain_height, 0)) : -1;
    }
  }
}

const std::string* VocabularyTrie::bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !bytes_[id] || bytes_[id]->empty()) return nullptr;
  return &*bytes_[id];
}

}  // namespace drift::grammar
