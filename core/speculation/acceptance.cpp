#include "core/speculation/acceptance.h"

#include <algorithm>

#include "core/sampler.h"

namespace drift {

AcceptedPath accept_draft(const DraftTree& tree, const float* logits, int64_t vocab, const SamplingParams& params,
                          uint64_t seed, uint64_t first_output_index) {
  AcceptedPath path;
  int32_t node = -1;  // the root
  for (uint64_t index = first_output_index;; ++index) {
    const float* row = logits + static_cast<int64_t>(node + 1) * vocab;
    const int32_t token = sample_token(row, vocab, params, seed, index);
    path.tokens.push_back(token);
    const int32_t child = tree.child_with_token(node, token);
    if (child < 0) return path;  // `token` is the bonus token
    path.nodes.push_back(child);
    node = child;
  }
}

AcceptedPath accept_picked(const DraftTree& tree, std::span<const int32_t> picks) {
  AcceptedPath path;
  for (int32_t node = -1;;) {
    const int32_t token = picks[node + 1];
    path.tokens.push_back(token);
    const int32_t child = tree.child_with_token(node, token);
    if (child < 0) return path;
    path.nodes.push_back(child);
    node = child;
  }
}

std::vector<RowSampling> pick_rows(const DraftTree& tree, const SamplingParams& params, uint64_t seed,
                                   uint64_t first_output_index) {
  std::vector<RowSampling> rows;
  rows.reserve(tree.size() + 1);
  rows.push_back({params, seed, first_output_index, {}, nullptr});
  for (int32_t depth : tree.depths()) rows.push_back({params, seed, first_output_index + depth, {}, nullptr});
  return rows;
}

void add_logit_adjustments(std::span<RowSampling> rows, const DraftTree& tree, const TokenOccurrences& seen,
                           std::span<const int32_t> eos_ids) {
  std::vector<int32_t> path;
  for (size_t r = 0; r < rows.size(); ++r) {
    path.clear();
    for (int32_t node = static_cast<int32_t>(r) - 1; node >= 0; node = tree.parents[node])
      path.push_back(tree.tokens[node]);
    std::reverse(path.begin(), path.end());
    rows[r].adjustments =
        logit_adjustments(rows[r].params, seen, path, static_cast<int64_t>(rows[r].output_index), eos_ids);
  }
}

}  // namespace drift
