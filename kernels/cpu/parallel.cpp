#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace drift::cpu {
namespace {

// A fixed pool: one job at a time (the model runner is single-threaded above the kernels).
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
    size_ = threads;
  }
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return size_; }

  void run(int parts, const std::function<void(int)>& part) {
    {
      std::lock_guard lock(mutex_);
      job_ = &part;
      parts_ = parts;
      pending_ = parts - 1;
      ++generation_;
    }
    wake_.notify_all();
    part(0);  // the caller takes part 0
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void worker_loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        job = index < parts_ ? job_ : nullptr;
      }
      if (!job) continue;
      (*job)(index);
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  int parts_ = 0, pending_ = 0, size_ = 1;
  uint64_t generation_ = 0;
  bool stopping_ = false;
};

int requested_threads = 0;

WorkerPool& pool() {
  static WorkerPool instance(requested_threads > 0
                                 ? requested_threads
                                 : std::max(1u, std::thread::hardware_concurrency()));
  return instance;
}

}  // namespace

void set_num_threads(int threads) { requested_threads = threads; }
// The pool is made once, at its first use; a later request for fewer threads still holds: work
// is split into at most that many parts.
int num_threads() { return requested_threads > 0 ? std::min(requested_threads, pool().size()) : pool().size(); }

void parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t max_parts = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int parts = static_cast<int>(std::min<int64_t>(num_threads(), max_parts));
  if (parts <= 1) {
    body(0, n);
    return;
  }
  pool().run(parts, [&](int part) {
    const int64_t begin = n * part / parts, end = n * (part + 1) / parts;
    if (begin < end) body(begin, end);
  });
}

}  // namespace drift::cpu
