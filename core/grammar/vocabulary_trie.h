#pragma once
// VocabularyTrie: every token's bytes (what it adds to the text in the middle of an output) in one
// byte trie, so a token mask walks each shared prefix once: tokens "name", "names" and "named"
// advance a grammar state over "name" a single time.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drift::grammar {

class VocabularyTrie {
 public:
  // token_bytes[id]: the token's bytes, or nullopt for one that is never text (a special or
  // control token): no grammar admits it. Empty strings are left out too.
  explicit VocabularyTrie(const std::vector<std::optional<std::string>>& token_bytes);

  struct Edge {
    uint8_t byte;
    int32_t child;
  };
  struct Node {
    int32_t first_edge = 0, num_edges = 0;
    int32_t first_token = 0, num_tokens = 0;  // the tokens whose bytes end here
  };
  static constexpr int32_t kRoot = 0;

  const Node& node(int32_t n) const { return nodes_[n]; }
  const Edge& edge(int32_t e) const { return edges_[e]; }
  int32_t token(int32_t i) const { return tokens_[i]; }
  int32_t vocab_size() const { return static_cast<int32_t>(bytes_.size()); }
  // The token's bytes, or nullptr for one left out.
  const std::string* bytes(int32_t id) const;

 private:
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<int32_t> tokens_;
  std::vector<std::optional<std::string>> bytes_;
};

}  // namespace drift::grammar
