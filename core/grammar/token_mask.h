#pragma once
// TokenMask: which tokens a grammar allows at one logit row, one bit per token id (bit id % 32 of
// word id / 32). Rows without one are unconstrained.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace drift::grammar {

struct TokenMask {
  std::vector<uint32_t> words;
  bool allows(int32_t id) const { return (words[static_cast<size_t>(id) >> 5] >> (id & 31)) & 1; }
  void allow(int32_t id) { words[static_cast<size_t>(id) >> 5] |= 1u << (id & 31); }
  int64_t count() const {
    int64_t n = 0;
    for (uint32_t w : words) n += std::popcount(w);
    return n;
  }
};

// Every logit of a token the mask does not allow becomes -infinity (ids past the mask too).
void apply_token_mask(float* row, int64_t vocab, const TokenMask& mask);

}  // namespace drift::grammar
