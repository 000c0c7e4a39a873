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
    // The tokens of the whole subtree (this node's first) are token(first_token) up to
    // token(subtree_end - 1): tokens are laid out depth first (nodes breadth first).
    int32_t subtree_end = 0;
    // When every byte below this node is plain (is_plain), the most of them a token adds past
    // it; -1 when some is not, or nothing is below.
    int32_t plain_height = -1;
  };
  static constexpr int32_t kRoot = 0;
  // Printable ASCII but the quote and the backslash: what most of a JSON string, a free-text
  // grammar or a regex's `.` takes a byte at a time. Subtrees made only of them are common
  // (three quarters of Llama 3's trie), and a mask may take them whole (token_constraint.cpp).
  static bool is_plain(uint8_t byte) { return byte >= 0x20 && byte <= 0x7E && byte != '"' && byte != '\\'; }

  const Node& node(int32_t n) const { return nodes_[n]; }
  const Edge& edge(int32_t e) const { return edges_[e]; }
  int32_t token(int32_t i) const { return tokens_[i]; }
  int32_t vocab_size() const { return static_cast<int32_t>(bytes_.size()); }
  // The token's bytes, or nullptr for one left out.
  const std::string* bytes(int32_t id) const;

 private:
  void summarize_subtrees();

  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  std::vector<int32_t> tokens_;
  std::vector<std::optional<std::string>> bytes_;
};

}  // namespace drift::grammar
