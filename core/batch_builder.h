#pragma once
// The ragged forward batch for one step's schedule: prefill chunks, decode tokens and verify
// trees, token by token, with each token's KV slot, visible length and (when any tree is
// verified) tree-mask row. Separate from the engine so the layout can be tested on its own.
#include "core/forward_batch.h"
#include "core/kv_cache_manager.h"
#include "core/scheduler.h"

namespace drift {

// With a sliding-window page group, prepare_window_pages (core/window_page_steps.h) must have run
// for `scheduled` first.
ForwardBatch build_forward_batch(const SchedulerOutput& scheduled, const KVCacheManager& kv);

}  // namespace drift
