#pragma once
// Acceptance: which drafted tokens a verify forward confirms, lossless by construction.
//
// The walk starts at the root (the last committed token). At each position the target picks
// its token exactly as plain decoding would at that output index: the argmax when greedy;
// otherwise the same seeded draw (sampler.h: counter-based on the request's seed and the token's
// index) from the same temperature / top-k / top-p / min-p distribution p. If a child of the
// current node holds that token, the child is accepted and the walk descends; otherwise the
// picked token is the bonus token and the walk ends (at a leaf, the pick there is the bonus).
//
// This is target-only tree sampling (SGLang's tree_speculative_sampling_target_only with both
// thresholds 1), exact for the deterministic drafts every provider here makes: a token drawn from
// p that is none of the children is distributed as p with the children excluded and
// renormalised, so every committed token is distributed as p. Since the draw is the one plain
// decoding makes, a speculative run commits the very tokens a plain run would, given the same
// logits. Draft probabilities never loosen acceptance (no typical or threshold acceptance: lossy).
#include <cstdint>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/sampling_params.h"
#include "core/speculation/draft_tree.h"

namespace drift {

struct AcceptedPath {
  std::vector<int32_t> nodes;   // accepted nodes, root to leaf (indices into the tree)
  std::vector<int32_t> tokens;  // their tokens, then the bonus token: nodes.size() + 1 tokens
};

// `logits` holds tree.size() + 1 rows of `vocab`: row 0 for the root, row 1 + i for node i.
// `first_output_index` is the output index of the token the root's row predicts.
AcceptedPath accept_draft(const DraftTree& tree, const float* logits, int64_t vocab, const SamplingParams& params,
                          uint64_t seed, uint64_t first_output_index);

// The same walk over the target's picks, made on the device so that only they leave it: picks[0]
// is the root row's token, picks[1 + i] node i's, each the token sample_token picks from that row
// at output index first_output_index + depth (pick_rows says which). Gives accept_draft's path.
AcceptedPath accept_picked(const DraftTree& tree, std::span<const int32_t> picks);
// The sampling of each of the tree.size() + 1 rows accept_picked reads.
std::vector<RowSampling> pick_rows(const DraftTree& tree, const SamplingParams& params, uint64_t seed,
                                   uint64_t first_output_index);
// pick_rows' rows given the logit adjustments of params (core/logit_adjustments.h): the root's
// after the tokens `seen` counts, node i's after them and the path from the root to node i.
void add_logit_adjustments(std::span<RowSampling> rows, const DraftTree& tree, const TokenOccurrences& seen,
                           std::span<const int32_t> eos_ids);

}  // namespace drift
