#pragma once
// SpeculationOptions: [speculative] as the engine runs it -- the draft budget and depth, the
// hybrid's fallback provider, and the acceptance rule (core/speculation/speculator.h uses them).
#include <cstdint>
#include <functional>
#include <string>

#include "core/sampling_params.h"
#include "core/speculation/acceptance.h"
#include "core/speculation/draft_tree.h"

namespace drift {

// Decides which drafted tokens a verify forward confirms (core/speculation/acceptance.h).
using AcceptanceRule =
    std::function<AcceptedPath(const DraftTree& tree, const float* logits, int64_t vocab, const SamplingParams& params,
                               uint64_t seed, uint64_t first_output_index)>;

struct SpeculationOptions {
  int64_t max_draft_tokens = 0;  // draft nodes per sequence and step ([speculative] max_draft_tokens)
  int64_t max_depth = 0;         // 0: no limit beyond what the request can still commit
  // Hybrid drafting ([speculative] fallback_provider / fallback_below): a tree of the default
  // provider scoring below fallback_below (sum of its path probabilities) is replaced by the
  // fallback provider's for that step.
  std::string fallback_provider;
  double fallback_below = 1.0;
  // Adaptive speculation ([speculative] adaptive): budgets chosen per request and step from the
  // measured costs and acceptance (AdaptiveSpeculation); false: max_draft_tokens every step.
  bool adaptive = false;
  // accept_draft, the lossless rule. Tests put deliberately wrong rules here to prove that the
  // statistical test of losslessness catches them; nothing else should. With the default rule
  // the engine runs its equivalent, accept_picked, over picks made where the logits are.
  AcceptanceRule acceptance = accept_draft;
  bool custom_acceptance = false;  // set with `acceptance`: the logits come to the host for it
};

}  // namespace drift
