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
    for (StateId s : states) now_.push_back({constraint, s});
  }
  wake_.notify_all();
}

void MaskWorkers::compute_ahead(const std::shared_ptr<TokenConstraint>& constraint, std::span<const StateId> states) {
  if (threads_.empty() || states.empty()) return;
  {
    std::lock_guard lock(mutex_);
    // Newest first, each state list in its own order (the most likely successors first).
    for (auto s = states.rbegin(); s != states.rend(); ++s) ahead_.push_front({constraint, *s});
    if (ahead_.size() > kMaxAhead) ahead_.resize(kMaxAhead);
  }
  wake_.notify_all();
}

void MaskWorkers::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !now_.empty() || !ahead_.empty(); });
      if (stopping_) return;
      std::deque<Job>& queue = now_.empty() ? ahead_ : now_;
      job = std::move(queue.front());
      queue.pop_front();
      ++busy_;
    }
    // Never waits: a state another thread is computing is that thread's. An error (out of
    // memory) reaches whoever asks for the mask, not this thread.
    try {
      job.constraint->prepare(job.state);
    } catch (...) {
    }
    job.constraint.reset();  // outside the lock: it may be the last reference
    std::lock_guard lock(mutex_);
    if (--busy_ == 0 && now_.empty() && ahead_.empty()) idle_.notify_all();
  }
}

void MaskWorkers::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return busy_ == 0 && now_.empty() && ahead_.empty(); });
}

int default_mask_workers(unsigned cores) { return cores <= 4 ? 0 : static_cast<int>(std::min(8u, cores / 2 - 1)); }

}  // namespace drift::grammar
