#pragma once
// The page list of a page_key_summary call (SpecPV/Quest block summaries), checked against the
// sequence's block table: how many filled slots each listed page holds. The summary itself is
// the backend's key_summary op. See drift/plugin.h for the contract.
#include <vector>

#include "core/plugin/backend_callbacks.h"

namespace drift {

// filled[i]: slots of pages[i] holding KV (>= 1). Refuses (tensor_checks) a page outside the
// sequence's block table or one not yet written.
std::vector<int32_t> filled_slots(const EngineKvAccess& kv, drift_seq_id_t seq, const drift_page_id_t* pages,
                                  int32_t num_pages);

}  // namespace drift
