#pragma once
// parallel_for: splits [0, n) into contiguous chunks over a small persistent worker pool.
// Work is partitioned by index only, so results never depend on the number of threads.
#include <cstdint>
#include <functional>

namespace drift::cpu {

// Number of threads used by parallel_for (default: hardware concurrency). The pool is created by
// the first parallel_for with the number asked by then; a later call can lower the number used
// (work is split into at most that many parts), not raise it past the pool.
void set_num_threads(int threads);
int num_threads();

// Runs body(begin, end) over chunks of at least `min_chunk` indices; returns when all are done.
void parallel_for(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& body);

}  // namespace drift::cpu
