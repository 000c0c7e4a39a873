#pragma once
// Scheduler: continuous batching. Each step it picks, under a per-step token budget,
//  1. one decode token for every running sequence that has finished its prefill (decode first),
//  2. the next chunk of every running sequence still prefilling (chunked prefill),
//  3. waiting sequences in arrival order (FIFO; a sequence that cannot be admitted blocks the
//     ones behind it, so nobody starves), while the capacity policy allows and the batch has
//     room. A parallel sample whose sibling is still computing their prompt steps aside until it
//     can share the sibling's pages (core/parallel_samples.h).
// Admission reserves KV slots for a sequence's whole known length (prompt + output so far), so its
// later prefill chunks never wait for pages; each decode token reserves one more slot. A decode
// sequence's draft (proposed at the end of the last step) is scheduled as lookahead tokens once
// every decode token has its slot: it shrinks to the remaining token budget and to the pages the
// policy lets it take, and never causes a preemption. When pages
// run out and the policy allows it, the most recently admitted sequence is preempted: its pages
// are freed and it returns to the waiting queue to be recomputed later. A sequence that could never fit
// (its worst case exceeds the whole pool) is rejected instead of blocking the queue.
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/capacity_policy.h"
#include "core/kv_cache_manager.h"
#include "core/sequence.h"

namespace drift {

// What the scheduler tells the rest of the engine (the plugin bridge: cache managers and
// per-request hooks). All optional: the default does nothing, as an engine without plugins.
class SchedulerObserver {
 public:
  virtual ~SchedulerObserver() = default;
  // Before a sequence's first chunk is reserved: may adopt leading full pages into `seq.kv`
  // (KVCacheManager::adopt_pages) and returns how many tokens they cover.
  virtual int64_t match_prefix(Sequence& /*seq*/) { return 0; }
  virtual void admitted(Sequence& /*seq*/) {}
  virtual void preempted(Sequence& /*seq*/) {}
  // Pages are short: ask whoever holds extra references (cache managers) to give `wanted`
  // back. Returns how many pages became free.
  virtual int64_t reclaim(int64_t /*wanted*/) { return 0; }
};

struct SchedulerLimits {
  int64_t max_batch_size = 32;
  int64_t max_num_tokens = 512;
  int64_t max_seq_len = 2048;
};

// What one sequence computes this step: a prefill chunk, a decode token, or a verify tree (the
// decode token -- the last committed token, the tree's root -- plus the draft's nodes, whose KV
// goes to the slots after it).
struct ScheduledChunk {
  Sequence* seq = nullptr;
  int64_t start = 0;          // first token position computed this step
  int64_t count = 0;          // tokens computed this step: the chunk, or 1 + draft.size()
  bool wants_logits = false;  // the chunk reaches the sequence's end: sample a token after it
  DraftTree draft;            // verified this step (decode only); shrunk to the budget and pages
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;
  std::vector<Sequence*> preempted;  // moved back to waiting this step
  std::vector<Sequence*> rejected;   // can never fit; the caller finishes them with an error
  int64_t num_tokens() const;
};

class Scheduler {
 public:
  Scheduler(SchedulerLimits limits, std::unique_ptr<CapacityPolicy> policy, KVCacheManager& kv);
  void set_observer(SchedulerObserver* observer) { observer_ = observer ? observer : &no_observer_; }

  void add(Sequence* seq);
  // Removes a sequence wherever it is (finish or abort) and frees its pages.
  void remove(Sequence* seq);
  SchedulerOutput schedule();

  const std::vector<Sequence*>& running() const { return running_; }
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  const CapacityPolicy& policy() const { return *policy_; }
  bool can_ever_fit(const Sequence& seq) const;

 private:
  bool schedule_running(Sequence* seq, int64_t& budget, SchedulerOutput& out);
  void schedule_drafts(int64_t& budget, SchedulerOutput& out);
  int64_t draft_nodes_that_fit(const ScheduledChunk& chunk, int64_t wanted);
  bool reserve_or_preempt(Sequence* seq, int64_t upto, SchedulerOutput& out);
  Sequence* pick_victim(const Sequence* requester, const SchedulerOutput& out) const;
  void preempt(Sequence* seq, SchedulerOutput& out);
  void admit_waiting(int64_t& budget, SchedulerOutput& out);
  void push_waiting_in_arrival_order(Sequence* seq);
  bool try_admit(Sequence* seq, int64_t budget, SchedulerOutput& out);

  SchedulerLimits limits_;
  std::unique_ptr<CapacityPolicy> policy_;
  KVCacheManager& kv_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // in admission order
  SchedulerObserver no_observer_;
  SchedulerObserver* observer_ = &no_observer_;
};

}  // namespace drift
