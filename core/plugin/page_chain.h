#pragma once
// Page-chain keys: the host's own record of what a cached KV page holds. The key of a request's
// block i is hash(key of block i - 1, the block's tokens) under a seed made from the request's
// cache salt, so equal keys mean "same salt, same tokens from position 0 through this block"
// (up to 64-bit collisions, which PluginHost rules out by also comparing the block's tokens).
// PluginHost keys every page a cache manager keeps and checks each page a cache manager names
// for a request against the request's own keys: a buggy or hostile plugin can never make a
// request adopt KV computed for other tokens or under another salt.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "drift/plugin.h"

namespace drift {

struct PageChainKey {
  int64_t block = -1;  // block-table index the page was offered at
  uint64_t key = 0;    // chain key through the end of that block
};

uint64_t page_chain_seed(std::string_view cache_salt);
// The key of the block after `parent_key` (0 for block 0) holding `tokens`.
uint64_t next_page_chain_key(uint64_t parent_key, std::span<const drift_token_t> tokens, uint64_t seed);
// Keys of the first `num_blocks` full blocks of `tokens` (which must hold them).
std::vector<uint64_t> page_chain_keys(std::span<const drift_token_t> tokens, int64_t block_size, int64_t num_blocks,
                                      uint64_t seed);

}  // namespace drift
