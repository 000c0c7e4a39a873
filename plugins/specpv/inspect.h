#pragma once
/* The specpv plugin's inspection extension, "drift.specpv.inspect/1" (get_extension), for tests
 * that hold its choices against a brute-force selection: a sequence's last refresh. C, like the
 * ABI it rides on. */
#include <stdint.h>

#include "drift/plugin.h"

#define SPECPV_INSPECT_KEY "drift.specpv.inspect/1"

typedef struct specpv_inspect_t {
  uint32_t struct_size;
  /* The last refresh of `seq`: its committed tokens, window and buffer blocks (W0, B0) into
   * bounds[0..2], and list `list`'s retrieved blocks (ascending) into blocks (at most cap).
   * Returns how many blocks were retrieved, or -1 when the sequence has no refresh. */
  int64_t (*retrieval)(void* instance, drift_seq_id_t seq, int64_t list, int64_t* bounds, int64_t* blocks, int64_t cap);
  /* Refreshes so far (every sequence). */
  int64_t (*refreshes)(void* instance);
} specpv_inspect_t;
