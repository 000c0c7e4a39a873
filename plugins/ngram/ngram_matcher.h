#pragma once
// Prompt-lookup matching, free of ABI types: the sequence's own earlier tokens predict what
// follows its last n tokens. The continuations of the best matches -- longest n-gram first, then
// most recent -- are merged into a trie, so shared prefixes share nodes and siblings are distinct.
#include <cstdint>
#include <span>
#include <vector>

namespace drift::ngram {

struct Settings {
  int64_t min_ngram = 1;
  int64_t max_ngram = 3;
  int64_t max_matches = 1;  // 1: a chain from the best match; more: a tree from several
  int64_t max_depth = 0;    // 0: as deep as the budget allows
};

struct Draft {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;  // topological: parents[i] < i; -1 = the sequence's last token
};

// Start positions (in `tokens`) of the continuations of the best matches, best first.
std::vector<size_t> find_matches(std::span<const int32_t> tokens, const Settings& settings);

// The draft for `tokens`: at most `budget` nodes.
Draft propose(std::span<const int32_t> tokens, const Settings& settings, int64_t budget);

}  // namespace drift::ngram
