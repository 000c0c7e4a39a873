#include "page_index.h"

#include <algorithm>
#include <stdexcept>

#define XXH_INLINE_ALL  // header-only use of libxxhash: the plugin needs no run-time library
#include <xxhash.h>

namespace drift::prefix_cache {

uint64_t xxh3_chain_hash(uint64_t parent_key, std::span<const Token> tokens, uint64_t seed) {
  // The parent key and the salt seed make the seed of the block's own hash: no copy of the tokens.
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(),
                              XXH3_64bits_withSeed(&parent_key, sizeof parent_key, seed));
}

uint64_t xxh3_bytes(std::string_view bytes, uint64_t seed) {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

PageIndex::PageIndex(int64_t block_size, uint64_t identity, ChainHash hash)
    : block_size_(block_size), identity_(identity), hash_(std::move(hash)) {}

uint64_t PageIndex::key_of(NodeId parent, std::span<const Token> tokens, uint64_t seed) const {
  return hash_(parent == kRoot ? 0 : nodes_.at(parent).key, tokens, seed);
}

std::optional<NodeId> PageIndex::child_under(NodeId parent, std::span<const Token> tokens, SaltRef salt) const {
  if (static_cast<int64_t>(tokens.size()) != block_size_) return std::nullopt;
  const auto [begin, end] = by_key_.equal_range(key_of(parent, tokens, salt->second.seed));
  for (auto it = begin; it != end; ++it) {
    const Node& node = nodes_.at(it->second);
    // The key only narrows the search: parent, salt and tokens decide (a collision is a miss).
    if (node.parent == parent && node.salt == salt && std::equal(tokens.begin(), tokens.end(), node.tokens.begin()))
      return it->second;
  }
  return std::nullopt;
}

std::optional<NodeId> PageIndex::child(NodeId parent, std::span<const Token> tokens, const std::string& salt) const {
  const SaltRef it = salts_.find(salt);
  return it == salts_.end() ? std::nullopt : child_under(parent, tokens, it);
}

std::vector<NodeId> PageIndex::walk(std::span<const Token> tokens, const std::string& salt, int64_t max_blocks) const {
  std::vector<NodeId> path;
  const SaltRef it = salts_.find(salt);
  if (it == salts_.end()) return path;  // no page under this salt
  NodeId parent = kRoot;
  const int64_t blocks = std::min(max_blocks, static_cast<int64_t>(tokens.size()) / block_size_);
  for (int64_t b = 0; b < blocks; ++b) {
    const auto next = child_under(parent, tokens.subspan(b * block_size_, block_size_), it);
    if (!next) break;
    path.push_back(parent = *next);
  }
  return path;
}

NodeId PageIndex::insert(NodeId parent, std::span<const Token> tokens, const std::string& salt, PageId page) {
  if (parent != kRoot && !nodes_.count(parent)) throw std::logic_error("prefix_cache: insert under a missing parent");
  auto [it, added] = salts_.try_emplace(salt);
  if (added) it->second.seed = xxh3_bytes(salt, identity_);
  it->second.nodes++;
  const NodeId id = next_id_++;
  Node node;
  node.key = key_of(parent, tokens, it->second.seed);
  node.parent = parent;
  node.salt = it;
  node.tokens.assign(tokens.begin(), tokens.end());
  node.page = page;
  node.last_used = ++clock_;
  by_key_.emplace(node.key, id);
  nodes_.emplace(id, std::move(node));
  if (parent != kRoot && nodes_.at(parent).children++ == 0) set_leaf(parent, false);
  set_leaf(id, true);
  return id;
}

void PageIndex::set_leaf(NodeId id, bool leaf) {
  const Node& node = nodes_.at(id);
  if (leaf)
    leaves_.emplace(node.last_used, id);
  else
    leaves_.erase({node.last_used, id});
}

void PageIndex::touch(std::span<const NodeId> nodes) {
  for (NodeId id : nodes) {
    Node& node = nodes_.at(id);
    const bool leaf = node.children == 0;
    if (leaf) set_leaf(id, false);
    node.last_used = ++clock_;
    if (leaf) set_leaf(id, true);
  }
}

void PageIndex::remove(NodeId id) {
  const Node& node = nodes_.at(id);
  set_leaf(id, false);
  const auto [begin, end] = by_key_.equal_range(node.key);
  for (auto it = begin; it != end; ++it)
    if (it->second == id) {
      by_key_.erase(it);
      break;
    }
  if (auto salt = salts_.find(node.salt->first); --salt->second.nodes == 0) salts_.erase(salt);
  const NodeId parent = node.parent;
  nodes_.erase(id);
  if (parent != kRoot && --nodes_.at(parent).children == 0) set_leaf(parent, true);
}

std::vector<PageId> PageIndex::evict(int64_t wanted, const std::function<bool(PageId)>& in_use, NodeId keep) {
  std::vector<PageId> released;
  std::set<NodeId> skipped;  // leaves still read by a sequence (or kept): not candidates in this call
  while (static_cast<int64_t>(released.size()) < wanted) {
    auto it = std::find_if(leaves_.begin(), leaves_.end(), [&](const auto& leaf) {
      if (skipped.count(leaf.second)) return false;
      if (leaf.second == keep || in_use(nodes_.at(leaf.second).page)) {
        skipped.insert(leaf.second);
        return false;
      }
      return true;
    });
    if (it == leaves_.end()) break;
    const NodeId id = it->second;
    released.push_back(nodes_.at(id).page);
    remove(id);
  }
  return released;
}

}  // namespace drift::prefix_cache
