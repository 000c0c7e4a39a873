#pragma once
// PageIndex: the prefix cache's index of KV pages, a tree of full pages keyed by hash chains
// (vLLM's block hashes, SGLang's radix tree at page granularity). A node is one cached page: its
// key is hash(parent's key, the page's tokens, the request's seed), and it remembers its parent,
// its tokens and its salt, so a lookup compares all three and a hash collision can never return
// a page for other tokens or another tenant. Leaves (pages no cached page continues) form the
// eviction order: least recently used first, skipping pages a running sequence still uses.
// Knows nothing of the plugin ABI beyond token and page ids; prefix_cache.cc drives it.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace drift::prefix_cache {

using Token = int32_t;
using PageId = int32_t;
using NodeId = int64_t;
constexpr NodeId kRoot = -1;  // the parent of a sequence's first page

// hash(parent key, tokens) under a seed; tests swap in a colliding one.
using ChainHash = std::function<uint64_t(uint64_t parent_key, std::span<const Token> tokens, uint64_t seed)>;
uint64_t xxh3_chain_hash(uint64_t parent_key, std::span<const Token> tokens, uint64_t seed);
uint64_t xxh3_bytes(std::string_view bytes, uint64_t seed);

class PageIndex {
 public:
  // `identity` seeds every key: the model and the configured salt, so keys of another model (or
  // configuration) never coincide by construction.
  PageIndex(int64_t block_size, uint64_t identity, ChainHash hash = xxh3_chain_hash);

  // The node continuing `parent` with `tokens` (one block) under `salt`, or nullopt.
  std::optional<NodeId> child(NodeId parent, std::span<const Token> tokens, const std::string& salt) const;
  // Nodes for the leading full blocks of `tokens` (at most max_blocks), root first.
  std::vector<NodeId> walk(std::span<const Token> tokens, const std::string& salt, int64_t max_blocks) const;
  // A new node for `page` holding `tokens` after `parent` (which must exist, or be kRoot); the
  // caller has checked child() found none.
  NodeId insert(NodeId parent, std::span<const Token> tokens, const std::string& salt, PageId page);
  // Marks nodes as just used (LRU order).
  void touch(std::span<const NodeId> nodes);

  // Up to `wanted` leaves to evict, least recently used first, removed from the index: a parent
  // whose last child goes becomes a leaf and may follow in the same call. Skips nodes whose page
  // `in_use` says a sequence still reads, and `keep` (a node being extended).
  std::vector<PageId> evict(int64_t wanted, const std::function<bool(PageId)>& in_use, NodeId keep = kRoot);

  bool contains(NodeId node) const { return nodes_.count(node) > 0; }
  PageId page(NodeId node) const { return nodes_.at(node).page; }
  int64_t size() const { return static_cast<int64_t>(nodes_.size()); }
  int64_t block_size() const { return block_size_; }

 private:
  // One entry per salt in use: its key seed (salt and identity) and how many nodes use it.
  struct Salt {
    uint64_t seed = 0;
    int64_t nodes = 0;
  };
  using SaltRef = std::map<std::string, Salt>::const_iterator;  // stable: equal refs <=> equal salts
  struct Node {
    uint64_t key = 0;
    NodeId parent = kRoot;
    SaltRef salt;
    std::vector<Token> tokens;
    PageId page = -1;
    int64_t children = 0;
    uint64_t last_used = 0;
  };
  uint64_t key_of(NodeId parent, std::span<const Token> tokens, uint64_t seed) const;
  std::optional<NodeId> child_under(NodeId parent, std::span<const Token> tokens, SaltRef salt) const;
  void remove(NodeId id);
  void set_leaf(NodeId id, bool leaf);

  int64_t block_size_;
  uint64_t identity_;
  ChainHash hash_;
  NodeId next_id_ = 0;
  uint64_t clock_ = 0;
  std::unordered_map<NodeId, Node> nodes_;
  std::unordered_multimap<uint64_t, NodeId> by_key_;
  std::set<std::pair<uint64_t, NodeId>> leaves_;  // (last_used, node): the eviction order
  std::map<std::string, Salt> salts_;
};

}  // namespace drift::prefix_cache
