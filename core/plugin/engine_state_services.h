#pragma once
// EngineStateServices: the host services that let a plugin read engine state from inside a
// hook -- a sequence's tokens, its block table, page facts, and the hidden states the last
// target forward captured at the layers plugins declared (on_declare_needs).
//
// Views handed out stay valid until the calling hook returns, however many a hook asks for:
// token lists are copied into an arena that lives until the next engine step (a copy is made
// once per sequence and length, so a plugin asking in a loop costs no memory). Captured hidden
// states are views into the executor's capture buffers, which the next forward replaces --
// after that step's draft and view hooks have run.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "core/forward_batch.h"
#include "core/kv_cache_manager.h"
#include "core/plugin/host_services.h"
#include "core/scheduler.h"
#include "core/sequence.h"
#include "core/speculation/kv_view_batch.h"

namespace drift {

class EngineStateServices {
 public:
  using SequenceLookup = std::function<const Sequence*(int64_t id)>;
  EngineStateServices(SequenceLookup lookup, const KVCacheManager& kv, const Scheduler& scheduler,
                      const ModelExecutor& executor);

  // Sets sequence_tokens, block_table, page_info and hidden_states. The callbacks refer to this
  // object, which must outlive them.
  void install(HostCallbacks& callbacks);
  void set_capture_layers(std::vector<int32_t> layers) { capture_layers_ = std::move(layers); }
  // The model's head_dim: query_states hands out [rows, heads, head_dim].
  void set_head_dim(int64_t head_dim) { head_dim_ = head_dim; }
  const std::vector<int32_t>& capture_layers() const { return capture_layers_; }

  // Rows of each scheduled sequence in the forward that just ran (chunk order = row order).
  void record_forward(const SchedulerOutput& scheduled);
  // After the commit: a verified sequence's rows are its root and its accepted nodes (moved
  // behind the root by ModelExecutor::reorder_captured), `kept` of them in all.
  void keep_rows(int64_t seq, int64_t kept);
  // The forward about to run keeps these sequences' verify-row queries (in its query capture).
  void record_query_rows(std::map<int64_t, QueryRows> rows) { query_rows_ = std::move(rows); }
  // A forward outside the step loop (scoring) replaced the captures: nothing is readable.
  void forget_forward() {
    rows_.clear();
    query_rows_.clear();
  }
  // A new engine step: views handed out during the last one are no longer in use.
  void begin_step();

 private:
  struct Rows {
    int64_t first = 0;
    int64_t count = 0;
  };
  drift_status_t sequence_tokens(drift_seq_id_t id, const drift_token_t** tokens, int64_t* n);
  drift_status_t block_table(drift_seq_id_t id, const drift_page_id_t** pages, int64_t* num_pages,
                             int64_t* num_tokens) const;
  drift_status_t page_info(drift_page_id_t page, drift_page_info_t* info) const;
  drift_status_t hidden_states(drift_seq_id_t id, int32_t layer, drift_tensor_t* out) const;
  drift_status_t query_states(drift_seq_id_t id, int32_t layer, drift_tensor_t* out) const;
  int32_t tokens_in_page(drift_page_id_t page) const;

  SequenceLookup lookup_;
  const KVCacheManager& kv_;
  const Scheduler& scheduler_;
  const ModelExecutor& executor_;
  std::vector<int32_t> capture_layers_;
  int64_t head_dim_ = 0;
  std::map<int64_t, Rows> rows_;             // request id -> its rows in the last forward
  std::map<int64_t, QueryRows> query_rows_;  // request id -> its rows in the last forward's query capture
  // Token lists handed out this step, by (request, length); deque: growing keeps them in place.
  std::deque<std::vector<drift_token_t>> token_views_;
  std::map<std::pair<int64_t, int64_t>, const std::vector<drift_token_t>*> token_view_index_;
};

}  // namespace drift
