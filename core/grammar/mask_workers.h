#pragma once
// MaskWorkers: threads that compute token masks before the engine thread asks for them. A mask
// computed for the first time walks the whole vocabulary trie (hundreds of microseconds on a
// 128K vocabulary), and a batch of requests entering new grammar states at once would otherwise
// make the engine thread walk them one after another while the device waits.
//
// Two queues: `now` holds states requests are in (their masks are wanted in this step), `ahead`
// the states one token further (a mask's successors, TokenConstraint::successors): where the
// requests will be after this step. Workers take `now` first, then the newest of `ahead`, then
// explore new grammars (mask_exploration.h), the newest first; the engine thread computes
// whatever no worker has started when it needs it, so a mask never waits for a queue. Masks are
// the same whoever computes them: this changes only when.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "core/grammar/mask_exploration.h"
#include "core/grammar/token_constraint.h"

namespace drift::grammar {

class MaskWorkers {
 public:
  // threads = 0: no workers, and every call below does nothing.
  explicit MaskWorkers(int threads);
  ~MaskWorkers();  // drops what is queued and joins the threads
  MaskWorkers(const MaskWorkers&) = delete;
  MaskWorkers& operator=(const MaskWorkers&) = delete;

  // Masks requests need in this step (their current states).
  void compute_now(const std::shared_ptr<TokenConstraint>& constraint, std::span<const StateId> states);
  // Masks they may need next (the successors of their states).
  void compute_ahead(const std::shared_ptr<TokenConstraint>& constraint, std::span<const StateId> states);

  // The masks of a new grammar's likeliest `max_states` states, from its start state on, while no
  // request's mask is wanted (0: none).
  void explore(const std::shared_ptr<TokenConstraint>& constraint, size_t max_states);

  // Blocks until nothing is queued or explored and no worker is computing (tests, benchmarks).
  void wait_idle();

  int threads() const { return static_cast<int>(threads_.size()); }
  // Queued `ahead` jobs kept at most; older ones are dropped first (their requests have moved on).
  static constexpr size_t kMaxAhead = 4096;

 private:
  struct Job {
    std::shared_ptr<TokenConstraint> constraint;
    StateId state;
    std::shared_ptr<MaskExploration> exploration;  // set for an exploring job
  };
  void run();
  // The most urgent job, if any (called under the lock).
  std::optional<Job> take_job();
  std::optional<Job> take_exploring_job();
  bool idle() const { return busy_ == 0 && now_.empty() && ahead_.empty() && explorations_.empty(); }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  int busy_ = 0;                 // workers computing a job
  std::deque<Job> now_, ahead_;  // ahead_: newest first
  std::deque<std::shared_ptr<MaskExploration>> explorations_;  // newest first; dropped when finished
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Workers for a machine with `cores` cores: none on a small machine (the engine thread and the
// backend need them), up to 8 on a large one.
int default_mask_workers(unsigned cores);

}  // namespace drift::grammar
