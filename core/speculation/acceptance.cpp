#include "core/speculation/acceptance.h"

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

}  // namespace drift
