#include "core/scheduler.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "core/parallel_samples.h"

namespace drift {

int64_t SchedulerOutput::num_tokens() const {
  int64_t n = 0;
  for (const auto& c : chunks) n += c.count;
  return n;
}

Scheduler::Scheduler(SchedulerLimits limits, std::unique_ptr<CapacityPolicy> policy, KVCacheManager& kv)
    : limits_(limits), policy_(std::move(policy)), kv_(kv) {}

bool Scheduler::can_ever_fit(const Sequence& seq) const {
  return worst_case_pages(seq, limits_.max_seq_len, kv_) <= kv_.num_pages();
}

void Scheduler::add(Sequence* seq) {
  seq->status = SequenceStatus::Waiting;
  push_waiting_in_arrival_order(seq);
}

void Scheduler::push_waiting_in_arrival_order(Sequence* seq) {
  auto pos = std::find_if(waiting_.begin(), waiting_.end(), [&](Sequence* s) { return s->arrival > seq->arrival; });
  waiting_.insert(pos, seq);
}

void Scheduler::remove(Sequence* seq) {
  seq->draft = {};
  std::erase(waiting_, seq);
  std::erase(running_, seq);
  if (seq->kv >= 0) kv_.free(seq->kv);
  seq->kv = -1;
}

void Scheduler::preempt(Sequence* seq, SchedulerOutput& out) {
  std::erase(running_, seq);
  seq->draft = {};
  kv_.free(seq->kv);
  seq->kv = -1;
  seq->stats.recomputed_tokens += seq->num_computed;
  seq->num_computed = 0;
  seq->stats.preemptions++;
  seq->status = SequenceStatus::Waiting;
  push_waiting_in_arrival_order(seq);
  out.preempted.push_back(seq);
  observer_->preempted(*seq);
}

// The latest-admitted running sequence with nothing scheduled yet this step (its tokens would
// otherwise have to be unscheduled); the requester itself when no other candidate exists.
Sequence* Scheduler::pick_victim(const Sequence* requester, const SchedulerOutput& out) const {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    Sequence* s = *it;
    if (s == requester) continue;
    bool scheduled = std::any_of(out.chunks.begin(), out.chunks.end(), [&](const ScheduledChunk& c) { return c.seq == s; });
    if (!scheduled) return s;
  }
  return const_cast<Sequence*>(requester);
}

// Grows `seq`'s KV to hold positions [0, upto), preempting others (or `seq` itself) when pages
// run out. False when `seq` was preempted.
bool Scheduler::reserve_or_preempt(Sequence* seq, int64_t upto, SchedulerOutput& out) {
  const int64_t n = std::max<int64_t>(0, upto - kv_.length(seq->kv));
  while (!kv_.append(seq->kv, n)) {
    // Cached pages go before running work does.
    if (observer_->reclaim(kv_.pages_needed_to_append(seq->kv, n) - kv_.num_free_pages()) > 0) continue;
    DRIFT_CHECK(policy_->allows_preemption(), "policy {} ran out of pages for sequence {}", policy_->name(), seq->id);
    Sequence* victim = pick_victim(seq, out);
    preempt(victim, out);
    if (victim == seq) return false;
  }
  return true;
}

bool Scheduler::schedule_running(Sequence* seq, int64_t& budget, SchedulerOutput& out) {
  const int64_t remaining = seq->total_len() - seq->num_computed;
  const int64_t n = std::min(remaining, budget);
  if (n <= 0) return false;
  if (!reserve_or_preempt(seq, seq->num_computed + n, out)) return false;
  out.chunks.push_back({seq, seq->num_computed, n, seq->num_computed + n == seq->total_len(), {}});
  budget -= n;
  return true;
}

// Largest n <= wanted such that the chunk's sequence can hold n more slots: within the policy's
// draft page limit and the pages free now. Cached pages are not asked back for a draft: a cache
// hit saves certain work, a draft only possible work.
int64_t Scheduler::draft_nodes_that_fit(const ScheduledChunk& chunk, int64_t wanted) {
  const SeqHandle kv = chunk.seq->kv;
  const int64_t limit = policy_->draft_page_limit(*chunk.seq, kv_);
  auto fits = [&](int64_t n) {
    return kv_.pages_for_tokens(kv_.length(kv) + n) <= limit && kv_.pages_needed_to_append(kv, n) <= kv_.num_free_pages();
  };
  int64_t n = wanted;
  while (n > 0 && !fits(n)) --n;
  return n;
}

// Grows each scheduled decode token with its sequence's draft. A tree keeps a topological prefix
// of its nodes when it must shrink, which is again a tree.
void Scheduler::schedule_drafts(int64_t& budget, SchedulerOutput& out) {
  for (ScheduledChunk& chunk : out.chunks) {
    Sequence* seq = chunk.seq;
    if (seq->draft.empty() || !chunk.wants_logits || chunk.count != 1 || chunk.start + 1 != seq->total_len()) continue;
    DraftTree draft = std::exchange(seq->draft, {});
    const int64_t nodes = draft_nodes_that_fit(chunk, std::min<int64_t>(static_cast<int64_t>(draft.size()), budget));
    if (nodes <= 0) continue;
    DRIFT_CHECK(kv_.append(seq->kv, nodes), "sequence {}: free pages vanished while reserving its draft", seq->id);
    draft.tokens.resize(nodes);
    draft.parents.resize(nodes);
    if (!draft.probs.empty()) draft.probs.resize(nodes);
    chunk.draft = std::move(draft);
    chunk.count += nodes;
    budget -= nodes;
  }
}

// Admits `seq` with a first chunk: prefix pages from the cache managers first, then slots for
// the rest of its known length. False (nothing changed) when the policy or the free pages say no.
bool Scheduler::try_admit(Sequence* seq, int64_t budget, SchedulerOutput& out) {
  seq->kv = kv_.create_sequence();
  seq->num_computed = observer_->match_prefix(*seq);
  // A parallel sample takes the prompt from a sibling when no cache manager had it.
  const int64_t shared = seq->num_computed == 0 ? share_sibling_prompt(*seq, running_, kv_) : 0;
  seq->num_computed += shared;
  const int64_t unreserved = seq->total_len() - kv_.length(seq->kv);
  // Free pages still missing for the policy and for the slots themselves.
  auto short_by = [&] {
    return std::max(policy_->pages_short(*seq, running_, kv_),
                    kv_.pages_needed_to_append(seq->kv, unreserved) - kv_.num_free_pages());
  };
  auto fits = [&] { return short_by() <= 0; };
  if (!fits()) {
    // Cached pages go before admission waits: ask for all that is missing in one go.
    observer_->reclaim(short_by());
    if (!fits() || !kv_.append(seq->kv, unreserved)) {
      kv_.free(seq->kv);
      seq->kv = -1;
      seq->num_computed = 0;
      return false;
    }
  } else {
    DRIFT_CHECK(kv_.append(seq->kv, unreserved), "sequence {}: {} free pages vanished", seq->id, kv_.num_free_pages());
  }
  const int64_t chunk = std::min(seq->total_len() - seq->num_computed, budget);
  seq->stats.shared_tokens += shared;
  seq->status = SequenceStatus::Running;
  running_.push_back(seq);
  out.chunks.push_back({seq, seq->num_computed, chunk, seq->num_computed + chunk == seq->total_len(), {}});
  observer_->admitted(*seq);
  return true;
}

void Scheduler::admit_waiting(int64_t& budget, SchedulerOutput& out) {
  auto it = waiting_.begin();
  while (it != waiting_.end() && budget > 0 && static_cast<int64_t>(running_.size()) < limits_.max_batch_size) {
    Sequence* seq = *it;
    if (!can_ever_fit(*seq)) {
      out.rejected.push_back(seq);
      it = waiting_.erase(it);
      continue;
    }
    // A sequence preempted in this very step waits for the next one.
    if (std::find(out.preempted.begin(), out.preempted.end(), seq) != out.preempted.end()) break;
    // A parallel sample waits for the sibling computing its prompt (a step or a few) and lets
    // the sequences behind it go first: it will not compute the prompt again beside it.
    if (waits_for_sibling_prompt(*seq, running_, kv_.block_size())) {
      ++it;
      continue;
    }
    if (!try_admit(seq, budget, out)) break;
    it = waiting_.erase(it);
    budget -= out.chunks.back().count;
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = limits_.max_num_tokens;
  // Snapshot: preemption edits running_ while we walk it.
  const std::vector<Sequence*> snapshot = running_;
  auto still_running = [&](Sequence* s) { return std::find(running_.begin(), running_.end(), s) != running_.end(); };
  for (Sequence* s : snapshot)  // decode tokens first
    if (still_running(s) && s->total_len() - s->num_computed == 1) schedule_running(s, budget, out);
  schedule_drafts(budget, out);  // then their drafts, with what is left
  for (Sequence* s : snapshot)  // then prefill chunks of admitted sequences
    if (still_running(s) && s->total_len() - s->num_computed > 1) schedule_running(s, budget, out);
  admit_waiting(budget, out);
  return out;
}

}  // namespace drift
