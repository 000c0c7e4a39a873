#pragma once
// SamplingParams: how one request picks its tokens and when it stops (and the per-request
// choices of speculation and prefix caching).
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
  std::vector<std::string> stop;            // stop strings: matched on the output text, never emitted...
  bool include_stop_str_in_output = false;  // ...unless this is set: then the matched one ends the text
  bool ignore_eos = false;
  // Speculative decoding for this request: "" = the engine's [speculative] setting, "off" = none,
  // or the name of another configured draft provider (A/B in one run).
  std::string speculative;
  // Verify this request's drafts against its whole context whatever the engine's verification
  // policy ([speculative] verification, e.g. specpv): exact, lossless speculation for this request.
  bool full_verification = false;
  // Prefix caching (a cache-manager plugin such as prefix_cache): false keeps this request out of
  // every cache manager (no lookup, nothing offered); cache_salt isolates it -- requests share
  // cached pages only when their salts are equal (e.g. one salt per tenant).
  bool prefix_cache = true;
  std::string cache_salt;
  // Log-probabilities (core/token_logprobs.h): -1 none; n in [0, 20] the committed token's and
  // the n most likely tokens' at every output position (RequestOutput::logprobs).
  int32_t logprobs = -1;
};

// The first out-of-range field, described so that each caller can name it the way its user wrote
// it: a request field, a config key (generation.top_p) or a CLI option (--top-p).
struct InvalidSamplingParam {
  std::string field;        // "temperature", "top_k", "top_p", "min_p", "max_new_tokens", "logprobs"
  std::string value;        // the value, formatted
  std::string requirement;  // e.g. "must be in (0, 1]"
};
std::optional<InvalidSamplingParam> find_invalid_sampling_param(const SamplingParams& params);

// Empty when valid, else a message naming the field and value (e.g. "temperature = -1: must be
// a finite number >= 0").
std::string validate_sampling_params(const SamplingParams& params);

}  // namespace drift
