#include "core/sampling_params.h"

#include <cmath>

#include <fmt/format.h>

#include "core/token_logprobs.h"

namespace drift {
namespace {

template <typename T>
InvalidSamplingParam invalid(const char* field, T value, const char* requirement) {
  return {field, fmt::format("{}", value), requirement};
}

}  // namespace

std::optional<InvalidSamplingParam> find_invalid_sampling_param(const SamplingParams& p) {
  if (!(p.temperature >= 0.0) || !std::isfinite(p.temperature))
    return invalid("temperature", p.temperature, "must be a finite number >= 0");
  if (p.top_k < 0) return invalid("top_k", p.top_k, "must be >= 0 (0 disables)");
  if (!(p.top_p > 0.0 && p.top_p <= 1.0)) return invalid("top_p", p.top_p, "must be in (0, 1]");
  if (!(p.min_p >= 0.0 && p.min_p <= 1.0)) return invalid("min_p", p.min_p, "must be in [0, 1]");
  if (p.max_new_tokens < 1) return invalid("max_new_tokens", p.max_new_tokens, "must be >= 1");
  if (p.logprobs < -1 || p.logprobs > kMaxTopLogprobs)
    return invalid("logprobs", p.logprobs, "must be in [0, 20] (or -1: none)");
  for (const auto& [field, value] :
       {std::pair{"presence_penalty", p.presence_penalty}, std::pair{"frequency_penalty", p.frequency_penalty}})
    if (!(value >= -2.0 && value <= 2.0)) return invalid(field, value, "must be in [-2, 2]");
  if (!(p.repetition_penalty > 0.0) || !std::isfinite(p.repetition_penalty))
    return invalid("repetition_penalty", p.repetition_penalty, "must be a finite number > 0 (1 = off)");
  for (const auto& [token, bias] : p.logit_bias) {
    if (token < 0) return invalid("logit_bias", token, "token ids must be >= 0");
    if (!(bias >= -100.0 && bias <= 100.0))
      return InvalidSamplingParam{"logit_bias", fmt::format("{{{}: {}}}", token, bias),
                                  "biases must be in [-100, 100]"};
  }
  if (p.min_tokens < 0 || p.min_tokens > p.max_new_tokens)
    return InvalidSamplingParam{"min_tokens", fmt::format("{}", p.min_tokens),
                                fmt::format("must be in [0, max_new_tokens] (max_new_tokens = {})", p.max_new_tokens)};
  return std::nullopt;
}

std::string validate_sampling_params(const SamplingParams& params) {
  const auto bad = find_invalid_sampling_param(params);
  return bad ? fmt::format("{} = {}: {}", bad->field, bad->value, bad->requirement) : "";
}

}  // namespace drift
