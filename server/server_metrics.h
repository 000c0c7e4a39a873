#pragma once
// ServerMetrics: what /metrics reports, in the Prometheus text exposition format (version 0.0.4).
// HTTP threads count responses; the engine thread records finished requests, latencies and a
// snapshot of the engine's own figures after every step. Thread-safe.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/cache_metrics.h"
#include "core/sequence.h"

namespace drift::server {

// A cumulative histogram with fixed upper bounds (seconds), as Prometheus expects.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket (not cumulative); the last is +Inf
  double sum_ = 0.0;
  int64_t count_ = 0;
};

// The engine's state after a step (engine thread -> /metrics).
struct EngineSnapshot {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t kv_pages_total = 0;
  int64_t kv_pages_free = 0;
  int64_t engine_steps = 0;
  int64_t prefill_tokens = 0;
  int64_t preemptions = 0;
  SpeculationStats speculation;
  std::map<int32_t, int64_t> draft_budgets;  // adaptive speculation: budget chosen -> times
  PrefixCacheMetrics prefix_cache;
};

class ServerMetrics {
 public:
  ServerMetrics();

  void count_http(const std::string& path, int status);
  void count_finished(FinishReason reason, int64_t prompt_tokens, int64_t output_tokens, double e2e_seconds);
  void observe_first_token(double seconds);
  void observe_inter_token(double seconds, int64_t tokens);  // `tokens` tokens arrived after `seconds`
  void set_engine(const EngineSnapshot& snapshot);
  EngineSnapshot engine() const;

  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> http_;
  std::map<std::string, int64_t> finished_;
  int64_t prompt_tokens_ = 0;
  int64_t generation_tokens_ = 0;
  Histogram ttft_;
  Histogram inter_token_;
  Histogram e2e_;
  EngineSnapshot engine_;
};

}  // namespace drift::server
