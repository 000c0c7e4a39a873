#include "oracle_tree.h"

#include <algorithm>

namespace drift::oracle {
namespace {

uint64_t mix(uint64_t x) {  // SplitMix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash(uint64_t seed, int64_t seq, int64_t position, int64_t sibling, uint64_t salt) {
  return mix(mix(mix(mix(seed ^ salt) + static_cast<uint64_t>(seq)) + static_cast<uint64_t>(position)) +
             static_cast<uint64_t>(sibling));
}

double unit(uint64_t h) { return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0); }

// A token in [0, vocab) that is not `truth` and not in `taken`.
int32_t wrong_token(uint64_t h, int32_t truth, const std::vector<int32_t>& taken, int64_t vocab) {
  for (uint64_t k = 0;; ++k) {
    const auto t = static_cast<int32_t>(mix(h + k) % static_cast<uint64_t>(vocab));
    if (t != truth && std::find(taken.begin(), taken.end(), t) == taken.end()) return t;
  }
}

}  // namespace

Tree build(const Shape& s, const std::vector<int32_t>& truth, int64_t seq, int64_t position, int64_t budget,
           int64_t vocab) {
  Tree tree;
  int32_t parent = -1;
  const int64_t levels = std::min<int64_t>(s.depth, static_cast<int64_t>(truth.size()));
  const int64_t width = std::min<int64_t>(s.branching, vocab);
  for (int64_t level = 0; level < levels; ++level) {
    const int64_t pos = position + level;
    const bool corrupt = unit(hash(s.seed, seq, pos, -1, 1)) < s.corruption;
    std::vector<int32_t> level_tokens = {corrupt ? wrong_token(hash(s.seed, seq, pos, 0, 2), truth[level], {}, vocab)
                                                 : truth[level]};
    for (int64_t k = 1; k < width; ++k)
      level_tokens.push_back(wrong_token(hash(s.seed, seq, pos, k, 3), truth[level], level_tokens, vocab));
    // The main candidate goes first at some levels and last at others: sibling choice matters.
    const bool main_last = hash(s.seed, seq, pos, -2, 4) % 2 == 1;
    if (main_last) std::rotate(level_tokens.begin(), level_tokens.begin() + 1, level_tokens.end());
    int32_t main_node = -1;
    for (size_t k = 0; k < level_tokens.size(); ++k) {
      if (static_cast<int64_t>(tree.tokens.size()) == budget) return tree;
      const bool is_main = main_last ? k + 1 == level_tokens.size() : k == 0;
      if (is_main) main_node = static_cast<int32_t>(tree.tokens.size());
      tree.tokens.push_back(level_tokens[k]);
      tree.parents.push_back(parent);
      tree.main.push_back(is_main);
    }
    if (main_node < 0) return tree;
    parent = main_node;
  }
  return tree;
}

}  // namespace drift::oracle
