#pragma once
/* The eagle3 plugin's inspection extension, "drift.eagle3.inspect/1" (get_extension): the draft
 * logits behind a sequence's last proposal, so tests can hold the head's numerics against the
 * PyTorch reference. Needs keep_logits = true in [plugins.<name>]. C, like drift/plugin.h. */
#include <stdint.h>

#include "drift/plugin.h"

#define EAGLE3_INSPECT_KEY "drift.eagle3.inspect/1"

typedef struct eagle3_inspect_t {
  uint32_t struct_size;
  /* Row 0: the root's draft logits (the distribution of the first draft token), then one row
   * per node the last proposal expanded, in expansion order. Writes rows * vocab floats into
   * out when cap allows (else only the counts); DRIFT_ERROR_NOT_FOUND for an unknown sequence. */
  drift_status_t (*draft_logits)(void* instance, drift_seq_id_t seq, float* out, int64_t cap, int64_t* rows,
                                 int64_t* vocab);
} eagle3_inspect_t;
