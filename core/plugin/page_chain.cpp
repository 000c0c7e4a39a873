#include "core/plugin/page_chain.h"

#define XXH_INLINE_ALL  // header-only use of libxxhash: no run-time library to ship
#include <xxhash.h>

namespace drift {

uint64_t page_chain_seed(std::string_view cache_salt) { return XXH3_64bits(cache_salt.data(), cache_salt.size()); }

uint64_t next_page_chain_key(uint64_t parent_key, std::span<const drift_token_t> tokens, uint64_t seed) {
  // The parent key and the salt seed make the seed of the block's own hash: two one-shot XXH3
  // calls, no copy of the tokens.
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(),
                              XXH3_64bits_withSeed(&parent_key, sizeof parent_key, seed));
}

std::vector<uint64_t> page_chain_keys(std::span<const drift_token_t> tokens, int64_t block_size, int64_t num_blocks,
                                      uint64_t seed) {
  std::vector<uint64_t> keys;
  keys.reserve(static_cast<size_t>(num_blocks));
  uint64_t parent = 0;
  for (int64_t b = 0; b < num_blocks; ++b) {
    parent = next_page_chain_key(parent, tokens.subspan(static_cast<size_t>(b * block_size), block_size), seed);
    keys.push_back(parent);
  }
  return keys;
}

}  // namespace drift
