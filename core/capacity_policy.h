#pragma once
// Capacity policies: whether a waiting sequence may be admitted given the KV pages free, and
// whether running sequences may be preempted when pages run out. Each policy is a small class.
//  - guaranteed_no_evict: reserves every admitted sequence's worst case (prompt +
//    max_new_tokens, capped by max_seq_len, plus its draft room) so a running sequence never
//    waits for a page.
//  - max_utilization: admits when the sequence's whole known length (prompt + output so far, the
//    KV it reserves at admission) and its next token fit beside one spare page per running
//    sequence; when pages run out, the most recently admitted sequence is preempted and later
//    recomputed. Requiring the whole length (not just a first chunk) is what stops a preempted
//    sequence from being readmitted into a cache it cannot fit and preempted again at once.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/sequence.h"

namespace drift {

class CapacityPolicy {
 public:
  virtual ~CapacityPolicy() = default;
  virtual std::string name() const = 0;
  // How many more free pages `candidate` needs before it may be admitted alongside `running`
  // (0: admit now). Its KV handle exists (holding any prefix-cache pages); admission reserves
  // slots for its whole known length. The scheduler asks cache managers for that many pages.
  virtual int64_t pages_short(const Sequence& candidate, const std::vector<Sequence*>& running,
                              const KVCacheManager& kv) const = 0;
  virtual bool allows_preemption() const = 0;
  // The most pages `seq` may hold while a draft tree is verified (its tail slots); the scheduler
  // shrinks the draft to fit this and the free pages, and never preempts anyone for a draft.
  virtual int64_t draft_page_limit(const Sequence& seq, const KVCacheManager& kv) const = 0;
};

// Pages a sequence can ever need: prompt (+ output so far) + remaining new tokens, capped by
// max_seq_len, plus its draft room (the slots a draft tree takes while it is verified).
int64_t worst_case_pages(const Sequence& seq, int64_t max_seq_len, const KVCacheManager& kv);

// "guaranteed_no_evict" | "max_utilization"; DriftError otherwise.
std::unique_ptr<CapacityPolicy> make_capacity_policy(const std::string& name, int64_t max_seq_len);

}  // namespace drift
