#include "core/capacity_policy.h"

#include <algorithm>

#include "core/error.h"

namespace drift {

int64_t worst_case_pages(const Sequence& seq, int64_t max_seq_len, const KVCacheManager& kv) {
  // max_new_tokens may be as large as int64 allows ("until max_seq_len"): clamp before adding.
  const int64_t remaining_new =
      std::clamp<int64_t>(seq.params.max_new_tokens - static_cast<int64_t>(seq.output.size()), 0, max_seq_len);
  const int64_t tokens = std::min(seq.total_len() + remaining_new, max_seq_len);
  return kv.pages_for_tokens(tokens + seq.draft_room);
}

namespace {

int64_t pages_held(const Sequence& seq, const KVCacheManager& kv) {
  return seq.kv >= 0 && kv.has_sequence(seq.kv) ? static_cast<int64_t>(kv.block_table(seq.kv).size()) : 0;
}

class GuaranteedNoEvict final : public CapacityPolicy {
 public:
  explicit GuaranteedNoEvict(int64_t max_seq_len) : max_seq_len_(max_seq_len) {}
  std::string name() const override { return "guaranteed_no_evict"; }
  bool allows_preemption() const override { return false; }
  // A draft stays inside the sequence's own promise (its worst case includes its draft room):
  // taking more would spend pages promised to another sequence.
  int64_t draft_page_limit(const Sequence& seq, const KVCacheManager& kv) const override {
    return worst_case_pages(seq, max_seq_len_, kv);
  }

  int64_t pages_short(const Sequence& candidate, const std::vector<Sequence*>& running,
                      const KVCacheManager& kv) const override {
    // Pages already promised to running sequences but not yet allocated stay untouchable.
    int64_t promised = 0;
    for (const Sequence* s : running)
      promised += std::max<int64_t>(0, worst_case_pages(*s, max_seq_len_, kv) - pages_held(*s, kv));
    // The candidate's pages held already (a prefix-cache hit, a sibling's prompt) are full and
    // read-only: they are part of its worst case but never taken from the free list.
    const int64_t needed = worst_case_pages(candidate, max_seq_len_, kv) - pages_held(candidate, kv);
    return std::max<int64_t>(0, needed + promised - kv.num_free_pages());
  }

 private:
  int64_t max_seq_len_;
};

class MaxUtilization final : public CapacityPolicy {
 public:
  std::string name() const override { return "max_utilization"; }
  bool allows_preemption() const override { return true; }
  int64_t draft_page_limit(const Sequence&, const KVCacheManager& kv) const override { return kv.num_pages(); }

  int64_t pages_short(const Sequence& candidate, const std::vector<Sequence*>& running,
                      const KVCacheManager& kv) const override {
    // Keep one page per running sequence in hand so admission does not immediately force the
    // running ones to preempt each other on their next decode token.
    const int64_t watermark = static_cast<int64_t>(running.size());
    const int64_t unreserved = candidate.total_len() - kv.length(candidate.kv);
    return std::max<int64_t>(0, kv.pages_needed_to_append(candidate.kv, unreserved + 1) + watermark - kv.num_free_pages());
  }
};

}  // namespace

std::unique_ptr<CapacityPolicy> make_capacity_policy(const std::string& name, int64_t max_seq_len) {
  if (name == "guaranteed_no_evict") return std::make_unique<GuaranteedNoEvict>(max_seq_len);
  if (name == "max_utilization") return std::make_unique<MaxUtilization>();
  fail("unknown scheduler policy '{}' (expected guaranteed_no_evict or max_utilization)", name);
}

}  // namespace drift
