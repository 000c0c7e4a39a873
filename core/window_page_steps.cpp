#include "core/window_page_steps.h"

#include "core/parallel_samples.h"

namespace drift {

void prepare_window_pages(const SchedulerOutput& scheduled, KVCacheManager& kv) {
  WindowPages* window = kv.window_pages();
  if (!window) return;
  for (const ScheduledChunk& chunk : scheduled.chunks) {
    const Sequence& seq = *chunk.seq;
    if (const int64_t shareable = shareable_prompt_tokens(seq, kv.block_size()); shareable > 0)
      window->pin_prefix_end(seq.kv, shareable);
    window->prepare_write(seq.kv, chunk.start, chunk.start + chunk.count);
  }
}

void release_passed_window_pages(const SchedulerOutput& scheduled, KVCacheManager& kv) {
  WindowPages* window = kv.window_pages();
  if (!window) return;
  for (const ScheduledChunk& chunk : scheduled.chunks)
    if (chunk.seq->kv >= 0 && kv.has_sequence(chunk.seq->kv))
      window->release_passed(chunk.seq->kv, chunk.seq->num_computed);
}

}  // namespace drift
