#pragma once
// Sequence: one request's state inside the engine — its tokens, how many have KV in the cache,
// its scheduling status and its statistics.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/kv_cache_manager.h"
#include "core/sampling_params.h"

namespace drift {

enum class SequenceStatus { Waiting, Running, Finished };
enum class FinishReason { None, Length, Stop, Abort, Error };
const char* finish_reason_name(FinishReason reason);  // "length" | "stop" | "abort" | "error"

using Clock = std::chrono::steady_clock;

struct RequestStats {
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t steps = 0;            // engine steps that computed tokens of this request
  int64_t preemptions = 0;
  int64_t recomputed_tokens = 0;  // KV recomputed after preemption
  double ttft_ms = 0.0;         // arrival -> first output token
  double latency_ms = 0.0;      // arrival -> finish
  uint64_t seed = 0;
};

struct Sequence {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
  SamplingParams params;
  uint64_t seed = 0;
  SequenceStatus status = SequenceStatus::Waiting;
  FinishReason finish_reason = FinishReason::None;
  std::string error;
  int64_t num_computed = 0;     // leading tokens whose K/V are in the cache
  SeqHandle kv = -1;            // KV manager handle while admitted
  int64_t arrival = 0;          // admission order key (FIFO fairness)
  Clock::time_point arrival_time = Clock::now();
  RequestStats stats;

  int64_t total_len() const { return static_cast<int64_t>(prompt.size() + output.size()); }
  int32_t token_at(int64_t i) const {
    return i < static_cast<int64_t>(prompt.size()) ? prompt[i] : output[i - prompt.size()];
  }
  bool finished() const { return status == SequenceStatus::Finished; }
};

}  // namespace drift
