#pragma once
// Prompt-lookup matching, free of ABI types (so it can be unit-tested without a host): the
// sequence's own earlier tokens predict what follows its last n tokens. The continuations of the
// best matches -- longest n-gram first, then most recent -- are merged into a trie, so shared
// prefixes share nodes and sibling tokens are distinct (as the host requires of a draft tree).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace drift::ngram {

struct Settings {
  int64_t min_ngram = 1;    // shortest suffix that counts as a match
  int64_t max_ngram = 3;    // longest suffix compared; longer matches win
  int64_t max_matches = 1;  // 1: a chain from the best match; more: a tree from several
  int64_t max_depth = 0;    // 0: as deep as the budget allows
};

struct Draft {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;  // topological: parents[i] < i; -1 = the sequence's last token
};

// Start positions (in `tokens`) of the continuations of up to max_matches distinct earlier
// occurrences of the sequence's suffix, best first. O(tokens.size()), whatever max_ngram is.
std::vector<size_t> find_matches(std::span<const int32_t> tokens, const Settings& settings);

// The draft for `tokens`: at most `budget` nodes, none deeper than max_depth (when set).
Draft propose(std::span<const int32_t> tokens, const Settings& settings, int64_t budget);

}  // namespace drift::ngram
