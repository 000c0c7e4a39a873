#pragma once
// SamplingParams: how one request picks its tokens and when it stops (and the per-request
// choices of speculation and prefix caching).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace drift {
namespace grammar {
struct StructuredOutput;
}

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
  // Logits shaping before every pick, vLLM's semantics (core/logit_adjustments.h), at each draft
  // node as at the root, so speculation stays lossless: logit_bias adds to a token's logit
  // ([-100, 100]); repetition_penalty (> 0, 1 = off) divides a positive logit of a token seen in
  // the prompt or the output and multiplies a negative one; frequency_penalty and
  // presence_penalty ([-2, 2]) subtract per occurrence in the output and once for any;
  // min_tokens keeps the end-of-sequence and stop_token_ids tokens from being picked until that
  // many tokens are out.
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  double repetition_penalty = 1.0;
  std::vector<std::pair<int32_t, double>> logit_bias;  // (token id, bias)
  int64_t min_tokens = 0;
  // Structured output (core/grammar/structured_output.h): the output must match this JSON
  // schema, regex, choice or grammar. Every logit row -- each draft node's too -- keeps only the
  // tokens the grammar allows after the output so far (the end-of-sequence tokens only where it
  // may end), before the logit adjustments and the pick; drafts that leave it are cut before
  // verification. Null: unconstrained.
  std::shared_ptr<const grammar::StructuredOutput> structured_output;
  bool shapes_logits() const {
    return presence_penalty != 0.0 || frequency_penalty != 0.0 || repetition_penalty != 1.0 || !logit_bias.empty() ||
           min_tokens > 0;
  }
};

// The first out-of-range field, described so that each caller can name it the way its user wrote
// it: a request field, a config key (generation.top_p) or a CLI option (--top-p).
struct InvalidSamplingParam {
  std::string field;        // "temperature", "top_k", ..., "logit_bias", "min_tokens"
  std::string value;        // the value, formatted
  std::string requirement;  // e.g. "must be in (0, 1]"
};
std::optional<InvalidSamplingParam> find_invalid_sampling_param(const SamplingParams& params);

// Empty when valid, else a message naming the field and value (e.g. "temperature = -1: must be
// a finite number >= 0").
std::string validate_sampling_params(const SamplingParams& params);

}  // namespace drift
