#pragma once
// The oracle's tree shape, free of ABI types: given the true continuation at the current
// position, `depth` levels of `branching` candidates each; the main candidate of a level is the
// true token unless corrupted (then the true token is absent from that level), the others are
// distinct wrong tokens, and only the main candidate has children. Every decision comes from a
// hash of (seed, request, position, level, sibling): reproducible and independent of batching.
#include <cstdint>
#include <vector>

namespace drift::oracle {

struct Shape {
  double corruption = 0.0;  // probability that a level's main candidate is a wrong token
  int64_t branching = 1;    // candidates per level
  int64_t depth = 4;        // levels
  uint64_t seed = 0;
};

struct Tree {
  std::vector<int32_t> tokens;
  std::vector<int32_t> parents;
  std::vector<bool> main;  // the level's main candidate (the one with children)
};

// `truth`: the true next tokens (at most `depth` are used); `position`: the output index of
// truth[0]; at most `budget` nodes; every token in [0, vocab).
Tree build(const Shape& shape, const std::vector<int32_t>& truth, int64_t seq, int64_t position, int64_t budget,
           int64_t vocab);

}  // namespace drift::oracle
