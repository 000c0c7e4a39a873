#pragma once
// The eagle3 plugin's state: the head, its workspace and one Request per sequence it drafts for.
// extend_requests (extension.cc) follows the target after each forward; propose_trees
// (proposal.cc) drafts; eagle3.cc holds the ABI hooks.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "draft_cache.h"
#include "draft_head.h"
#include "host.h"
#include "memory_plan.h"
#include "settings.h"
#include "workspace.h"

namespace eagle3 {

struct Request {
  explicit Request(DraftKvPool& pool) : cache(pool) {}
  DraftCache cache;
  // Set by the extension of the step that made the root ready to draft from (its root_step):
  int64_t root_step = -1;
  int64_t root_position = 0;  // the last committed token's position
  int64_t root_row = 0;       // its row in Plugin::root_y
  std::vector<int32_t> root_tokens;
  std::vector<float> root_probs;
  std::vector<float> logits;  // keep_logits: the root's, then each expanded node's
  int64_t logit_rows = 0;
};

struct Plugin {
  Plugin(const drift_host_api_t* api, const std::string& settings_toml);

  Host host;
  Settings settings;
  std::unique_ptr<DraftHead> head;
  MemoryPlan plan;  // what the weights, workspace and KV pool below take (declare_memory)
  std::unique_ptr<Workspace> workspace;
  std::unique_ptr<DraftKvPool> kv_pool;
  std::vector<int32_t> capture_layers;  // target layers whose output is an aux id's input
  std::map<drift_seq_id_t, std::unique_ptr<Request>> requests;  // after kv_pool: their pages go back first
  drift_tensor_t root_y{};  // [ready sequences, H]: the extension's last rows
};

// Extends the draft KV of the sequences in `rows` over their new committed positions; those
// now ready to draft get their root distribution. Per-sequence failures set the row's status.
void extend_requests(Plugin& p, int64_t step, drift_forward_rows_t* const* rows, size_t n);
// Fills each tree from the head (sequences without a ready root get none).
void propose_trees(Plugin& p, int64_t step, drift_draft_tree_t* const* trees, size_t n);

}  // namespace eagle3
