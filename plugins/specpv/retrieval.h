#pragma once
// The refresh of a full verification: page key summaries (elementwise max / min of each block's
// post-RoPE keys per layer and kv head, host->page_key_summary) kept per sequence and computed
// once per block, as blocks become candidates; then the candidates scored per (layer, kv head)
// with the verify rows' queries (host->query_states, host->page_scores) and the best
// n_retrieval_blocks taken (host->top_k) -- all on the engine's device, on the hook's stream;
// only the chosen indices come back to the host.
#include <cstdint>
#include <vector>

#include "drift/plugin.h"
#include "drift/plugin_helpers.hpp"
#include "selection.h"

namespace specpv {

// Checked host calls and host-owned tensors come from the public C++ helper.
using drift::plugin::check;
using drift::plugin::Tensor;
using drift::plugin::view;

// Scratch shared by every sequence's refresh, grown on demand.
struct Workspace {
  Tensor scores;   // F32 [lists, candidates]
  Tensor values;   // F32 [lists, k]
  Tensor indices;  // I32 [lists, k]
};

class SequenceSummaries {
 public:
  // capacity_blocks: the most blocks the sequence can reach (prompt + max new tokens).
  SequenceSummaries(const drift_host_api_t* host, const drift_model_info_t& model, int64_t capacity_blocks);

  // Summaries for every block in [first, end) not yet summarised (blocks before `first` that are
  // not summarised stay so: sinks are never scored).
  void summarise(drift_seq_id_t seq, const drift_page_id_t* table, int64_t first, int64_t end);
  // The refresh at the sequence's committed tokens (its block table's count): the retrieval set
  // and the window from there on.
  Retrieval refresh(drift_seq_id_t seq, void* stream, const Settings& s, Workspace& work);
  int64_t summarised_blocks() const { return summarised_; }

 private:
  const drift_host_api_t* host_;
  int64_t layers_, kv_heads_, head_dim_, capacity_;
  Tensor kmax_, kmin_;      // F32 [layers, capacity, kv_heads, head_dim], allocated at the first refresh
  int64_t summarised_ = 0;  // blocks [summary_start_, summarised_) hold their summary
  int64_t summary_start_ = -1;
};

}  // namespace specpv
