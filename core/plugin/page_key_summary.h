#pragma once
// The page_key_summary host service on the CPU backend: SpecPV/Quest block summaries -- per
// page of a sequence, the elementwise max and min of its post-RoPE keys over the page's filled
// slots -- read straight from the engine's paged KV. See drift/plugin.h for the contract.
#include "core/plugin/backend_callbacks.h"

namespace drift {

drift_status_t cpu_page_key_summary(const EngineKvAccess& kv, drift_seq_id_t seq, int32_t layer,
                                    const drift_page_id_t* pages, int32_t num_pages, drift_tensor_t* kmax,
                                    drift_tensor_t* kmin);

}  // namespace drift
