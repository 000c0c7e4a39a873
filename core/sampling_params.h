#pragma once
// SamplingParams: how one request picks its tokens and when it stops.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drift {

struct SamplingParams {
  double temperature = 0.0;     // 0: greedy
  int64_t top_k = 0;            // 0: off
  double top_p = 1.0;           // 1: off
  double min_p = 0.0;           // 0: off
  std::optional<uint64_t> seed; // unset: the engine picks one (reported in the request's stats)
  int64_t max_new_tokens = 128;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
};

// Empty when valid, else a message naming the field and value (e.g. "temperature = -1: must be
// >= 0").
std::string validate_sampling_params(const SamplingParams& params);

}  // namespace drift
