#pragma once
// Drafts from a suffix tree (SuffixDecoding): from where the context's last tokens end in the
// tree, continue along what followed them before. Along an edge the next token is certain;
// at a node, a child's probability is its share of the occurrences that went on. A chain takes
// the most frequent child while the path probability (the product along the path) stays >=
// min_token_prob; a tree grows best-first by path probability, over nodes whose path
// probability is >= min_token_prob. A match of L tokens drafts at
// most min(max_spec_tokens, alpha * L + beta) tokens (and the engine's budget): longer matches
// are trusted further. A draft's score is the sum of its path probabilities -- the tokens it
// expects to be accepted -- and the best-scoring match wins.
#include <cstdint>
#include <vector>

#include "suffix_tree.h"

namespace suffix {

struct DraftParams {
  int32_t max_spec_tokens = 16;
  double alpha = 1.0;
  double beta = 0.0;
  double min_token_prob = 0.1;
  bool tree = false;
};

struct Draft {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;  // -1: the sequence's last committed token
  std::vector<float> probs;      // each token's probability given its parent
  double score = 0.0;            // sum of path probabilities
  int32_t match_length = 0;
  bool empty() const { return tokens.empty(); }
};

// The draft from one match position, at most `limit` tokens.
Draft draft_from(Position at, int32_t limit, const DraftParams& params);
// The best draft over the matches: matches[L - 1] is where the context's last L tokens end
// (invalid when the tree lacks them). `budget`: the engine's node budget.
Draft best_draft(const std::vector<Position>& matches, const DraftParams& params, int32_t budget);

}  // namespace suffix
