#pragma once
// VerificationMetrics: what the verification policy chose for the verify forwards and what the
// forwards cost, counted by the engine (never from a plugin's own report). A partial view (SpecPV)
// attends to page lists instead of the whole context; these figures show how often, how much of
// the context it read, and the verify forwards' time with and without partial views.
#include <cstdint>

namespace drift {

struct VerificationMetrics {
  int64_t full_views = 0;     // verify chunks attending to their whole block table
  int64_t partial_views = 0;  // verify chunks attending to page lists
  // Over the partial views: pages attended per list (listed pages + the tail), summed, and the
  // pages the sequences' block tables held (the context a full verification would read).
  int64_t partial_pages_attended = 0;
  int64_t partial_context_pages = 0;
  // Forwards with verify chunks: those where at least one chunk had a partial view, and the rest.
  int64_t partial_verify_steps = 0;
  double partial_verify_seconds = 0.0;
  int64_t full_verify_steps = 0;
  double full_verify_seconds = 0.0;

  double partial_step_ms() const {
    return partial_verify_steps ? 1e3 * partial_verify_seconds / partial_verify_steps : 0.0;
  }
  double full_step_ms() const { return full_verify_steps ? 1e3 * full_verify_seconds / full_verify_steps : 0.0; }
  // The share of the context a partial view read, averaged over partial views.
  double attended_fraction() const {
    return partial_context_pages ? static_cast<double>(partial_pages_attended) / partial_context_pages : 0.0;
  }

  // The figures of what ran between two snapshots (drift bench's per-variant share).
  friend VerificationMetrics operator-(const VerificationMetrics& after, const VerificationMetrics& before) {
    return {after.full_views - before.full_views,
            after.partial_views - before.partial_views,
            after.partial_pages_attended - before.partial_pages_attended,
            after.partial_context_pages - before.partial_context_pages,
            after.partial_verify_steps - before.partial_verify_steps,
            after.partial_verify_seconds - before.partial_verify_seconds,
            after.full_verify_steps - before.full_verify_steps,
            after.full_verify_seconds - before.full_verify_seconds};
  }
};

}  // namespace drift
