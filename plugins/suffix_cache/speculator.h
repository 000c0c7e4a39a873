#pragma once
// Speculator: SuffixDecoding's state for one engine. Each request has its own tree over its
// prompt and output; one global tree holds the responses (outputs only, as in the paper) of
// running and finished requests, the oldest evicted first beyond max_cached_requests. A draft
// comes from whichever tree gives the better-scoring one for the request's context.
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>

#include "draft.h"
#include "settings.h"
#include "suffix_tree.h"

namespace suffix {

class Speculator {
 public:
  explicit Speculator(Settings settings);

  // `tokens`: prompt (+ output so far when resumed after a preemption).
  void start(int64_t seq, std::span<const int32_t> tokens, bool resumed);
  void accept(int64_t seq, std::span<const int32_t> tokens);
  // The request's own tree goes; its response stays in the global tree.
  void finish(int64_t seq);
  // The best draft for the request's context, at most `budget` tokens (empty when nothing fits).
  Draft propose(int64_t seq, int32_t budget);

  const Settings& settings() const { return settings_; }
  // Its own figures as a JSON object (the drift.stats/1 extension).
  std::string stats_json() const;

 private:
  void remember_response(int64_t seq);

  Settings settings_;
  std::map<int64_t, std::unique_ptr<SuffixTree>> requests_;
  SuffixTree global_;
  std::deque<int64_t> global_order_;  // requests in the global tree, oldest first
  std::set<int64_t> in_global_;
  struct Stats {
    int64_t proposals = 0, from_request = 0, from_global = 0, empty = 0, drafted_tokens = 0;
    int64_t updated_tokens = 0, evicted_requests = 0;
    std::chrono::nanoseconds propose_time{0}, update_time{0};
  } stats_;
};

}  // namespace suffix
