#pragma once
// The sliding-window page group (core/kv_window_pages.h) around one engine step; nothing without
// one. Before the forward, every chunk's positions get their window blocks (and what the window
// passed is released); after the step committed, each chunk's sequence keeps only what its next
// queries can see. A parallel sample's prompt end stays pinned, so siblings admitted later can
// still share the prompt.
#include "core/kv_cache_manager.h"
#include "core/scheduler.h"

namespace drift {

void prepare_window_pages(const SchedulerOutput& scheduled, KVCacheManager& kv);
void release_passed_window_pages(const SchedulerOutput& scheduled, KVCacheManager& kv);

}  // namespace drift
