#include "core/grammar/vocabulary_trie.h"

#include <algorithm>
#include <numeric>

namespace drift::grammar {

VocabularyTrie::VocabularyTrie(const std::vector<std::optional<std::string>>& token_bytes) : bytes_(token_bytes) {
  // Insert into a pointer-style trie, then flatten breadth-first into contiguous edges.
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
    n.first_token = static_cast<int32_t>(tokens_.size());
    n.num_tokens = static_cast<int32_t>(b.tokens.size());
    tokens_.insert(tokens_.end(), b.tokens.begin(), b.tokens.end());
  }
}

const std::string* VocabularyTrie::bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !bytes_[id] || bytes_[id]->empty()) return nullptr;
  return &*bytes_[id];
}

}  // namespace drift::grammar
