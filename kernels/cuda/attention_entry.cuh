#pragma once
// Shared by both attention kernels: where a query's kv_len / mask_start live.
#include "kernels/cuda/ops.h"

namespace drift::cuda {

// entry: the (query, kv head) index of kv_len / mask_start (the query itself unless page lists
// are per kv head); t: the query (its mask row).
__device__ __forceinline__ int64_t entry_of(const PagedAttentionParams& p, int64_t t, int64_t kv_head) {
  return p.tables_per_seq > 1 ? t * p.tables_per_seq + kv_head : t;
}

}  // namespace drift::cuda
