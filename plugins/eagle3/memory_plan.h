#pragma once
// MemoryPlan: everything the plugin holds on the engine device, sized before it is created so the
// engine budgets it beside its own KV pool (declare_memory, ABI 1.4), then allocated at create
// and never grown:
//  - the head's weights (what its checkpoint stores, in the activation dtype);
//  - the draft forward's workspace: each buffer at the most rows one call can bring (an extension
//    window of extension_rows; a tree level of max_batch_size sequences, each expanding at most
//    its shape's nodes per level, whatever the verify budget; the roots of max_batch_size
//    sequences);
//  - the draft KV pool, in pages of the engine's block size: one slot per token the engine's pool
//    holds (bytes_per_kv_token, which the engine counts with its pages), plus, per sequence, the
//    draft tree's rows and a partly filled page (fixed).
#include <cstdint>
#include <string>
#include <vector>

#include "drift/plugin.h"
#include "head_config.h"
#include "settings.h"

namespace eagle3 {

struct WorkspaceRole {
  std::string name;
  int32_t dtype = DRIFT_DTYPE_F32;
  int64_t elements = 0;  // the most one call asks for
};

struct MemoryPlan {
  int64_t weight_bytes = 0;
  std::vector<WorkspaceRole> workspace;
  int64_t kv_block_size = 0;       // the engine's page size
  int64_t scratch_pages = 0;       // draft KV pages beside the mirror of the engine's pool
  int64_t kv_bytes_per_token = 0;  // the head's K and V of one position
  int64_t workspace_bytes() const;
  // Everything but the mirror: weights, workspace and scratch pages.
  int64_t fixed_bytes() const;
  // The draft KV pool's pages when the engine's pool has `engine_pages`.
  int64_t kv_pages(int64_t engine_pages) const { return engine_pages + scratch_pages; }
};

// `checkpoint`: the head's folder (its model.safetensors header gives the weights' sizes);
// `model`: the engine's description (activation dtype, block size, max_batch_size of ABI 1.4).
MemoryPlan plan_memory(const HeadConfig& config, const Settings& settings, const drift_model_info_t& model,
                       const std::string& checkpoint);

}  // namespace eagle3
