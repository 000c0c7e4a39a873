#pragma once
// DraftTiming: how long the engine waited on draft work in plugins, measured by the host around
// the hooks (never from a plugin's own report): on_propose calls, and on_target_forward, through
// which a draft model (EAGLE-3) follows the target. Hooks that run device work return once their
// results are on the host, so this is the drafting time a step pays.
#include <cstdint>

namespace drift {

struct DraftTiming {
  int64_t propose_calls = 0;          // engine steps that asked a draft provider for trees
  double propose_seconds = 0.0;       // inside on_propose
  double forward_hook_seconds = 0.0;  // inside on_target_forward
  // Of both, the time in steps that only decoded (no prefill chunk): the cost a step of
  // speculative decoding pays for its draft (a draft model also follows every prefill chunk).
  double decode_seconds = 0.0;
  double seconds() const { return propose_seconds + forward_hook_seconds; }
};

}  // namespace drift
