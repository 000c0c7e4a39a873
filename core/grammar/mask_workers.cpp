#include "core/grammar/mask_workers.h"

#include <algorithm>
#include <exception>

namespace drift::grammar {

MaskWorkers::MaskWorkers(int threads) {
  try {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
  } catch (const std::exception&) {  // fewer workers, or none: masks are still made when asked for
  }
}

MaskWorkers::~MaskWorkers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void MaskWorkers::compute_now(const std::shared_ptr<TokenConstraint>& constraint, std::span<const StateId> states) {
  if (threads_.empty() || states.empty()) return;
  {
    std::lock_guard lock(mutex_);
    for (StateId s : states) now_.push_back({constraint, s, nullptr});
  }
  wake_.notify_all();
}

void MaskWorkers::compute_ahead(const std::shared_ptr<TokenConstraint>& constraint, std::span<const StateId> states) {
  if (threads_.empty() || states.empty()) return;
  {
    std::lock_guard lock(mutex_);
    // Newest first, each state list in its own order (the most likely successors first).
    for (auto s = states.rbegin(); s != states.rend(); ++s) ahead_.push_front({constraint, *s, nullptr});
    if (ahead_.size() > kMaxAhead) ahead_.resize(kMaxAhead);
  }
  wake_.notify_all();
}

void MaskWorkers::explore(const std::shared_ptr<TokenConstraint>& constraint, size_t max_states) {
  if (threads_.empty() || max_states == 0) return;
  {
    std::lock_guard lock(mutex_);
    explorations_.push_front(std::make_shared<MaskExploration>(constraint, max_states));
  }
  wake_.notify_all();
}

std::optional<MaskWorkers::Job> MaskWorkers::take_job() {
  for (std::deque<Job>* queue : {&now_, &ahead_}) {
    if (queue->empty()) continue;
    Job job = std::move(queue->front());
    queue->pop_front();
    return job;
  }
  return take_exploring_job();
}

// From the newest exploration that has a state to give; those whose grammar is gone, or that are
// done, are dropped on the way.
// A grammar is only held here for a job's sake: the job releases it outside the lock, so a last
// reference never destroys its masks under the lock.
std::optional<MaskWorkers::Job> MaskWorkers::take_exploring_job() {
  for (auto it = explorations_.begin(); it != explorations_.end();) {
    MaskExploration& exploration = **it;
    if (!exploration.expired()) {
      if (std::optional<StateId> state = exploration.take()) {
        if (std::shared_ptr<TokenConstraint> constraint = exploration.constraint())
          return Job{std::move(constraint), *state, *it};
        exploration.explored(*state, {});  // gone since the check above
      } else if (!exploration.finished()) {
        ++it;  // its states are being computed: their successors may come
        continue;
      }
    }
    it = explorations_.erase(it);
  }
  return std::nullopt;
}

void MaskWorkers::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    std::optional<Job> job;
    wake_.wait(lock, [&] {
      if (stopping_ || (job = take_job())) return true;
      // Looking for a job may have dropped the last exploration (its grammar gone): that can
      // be what wait_idle waits for.
      if (idle()) idle_.notify_all();
      return false;
    });
    if (stopping_) return;
    ++busy_;
    lock.unlock();
    // Never waits for a mask, except an exploring job for its state's successors when another
    // thread is computing that state. An error (out of memory) reaches whoever asks for the
    // mask, not this thread.
    std::vector<std::pair<StateId, int32_t>> successors;
    try {
      job->constraint->prepare(job->state);
      if (job->exploration) successors = job->constraint->weighted_successors(job->state);
    } catch (...) {
    }
    job->constraint.reset();  // outside the lock: it may be the last reference
    lock.lock();
    if (job->exploration) {
      job->exploration->explored(job->state, successors);
      if (job->exploration->finished()) std::erase(explorations_, job->exploration);
      wake_.notify_all();  // its successors may be work for the others
    }
    --busy_;
    if (idle()) idle_.notify_all();
  }
}

void MaskWorkers::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return idle(); });
}

int default_mask_workers(unsigned cores) { return cores <= 4 ? 0 : static_cast<int>(std::min(8u, cores / 2 - 1)); }

}  // namespace drift::grammar
