#include "core/logit_adjustments.h"

#include <limits>
#include <map>

namespace drift {

TokenOccurrences::TokenOccurrences(std::span<const int32_t> prompt, std::span<const int32_t> output) {
  for (int32_t token : prompt) seen_[token].in_prompt = true;
  for (int32_t token : output) ++seen_[token].in_output;
}

std::vector<LogitAdjustment> logit_adjustments(const SamplingParams& params, const TokenOccurrences& seen,
                                               std::span<const int32_t> path, int64_t output_index,
                                               std::span<const int32_t> eos_ids) {
  if (!params.shapes_logits()) return {};
  // Ordered by token, so a row's adjustments (and the order a device applies them in) never
  // depend on hashing.
  std::map<int32_t, LogitAdjustment> by_token;
  auto at = [&](int32_t token) -> LogitAdjustment& {
    LogitAdjustment& a = by_token[token];
    a.token = token;
    return a;
  };
  for (const auto& [token, bias] : params.logit_bias) at(token).before += static_cast<float>(bias);
  const bool penalised =
      params.repetition_penalty != 1.0 || params.frequency_penalty != 0.0 || params.presence_penalty != 0.0;
  if (penalised) {
    std::unordered_map<int32_t, int32_t> on_path;  // output occurrences the draft path adds
    for (int32_t token : path) ++on_path[token];
    auto penalise = [&](int32_t token, int32_t in_output, bool in_prompt) {
      const bool repeated = params.repetition_penalty != 1.0 && (in_output > 0 || in_prompt);
      const bool counted = in_output > 0 && (params.frequency_penalty != 0.0 || params.presence_penalty != 0.0);
      if (!repeated && !counted) return;  // no entry that changes nothing
      LogitAdjustment& a = at(token);
      if (params.repetition_penalty != 1.0) {
        a.positive_divisor = static_cast<float>(params.repetition_penalty);
        a.negative_factor = static_cast<float>(params.repetition_penalty);
      }
      if (in_output > 0) a.after -= static_cast<float>(params.frequency_penalty * in_output + params.presence_penalty);
    };
    for (const auto& [token, s] : seen.tokens()) {
      const auto extra = on_path.find(token);
      penalise(token, s.in_output + (extra == on_path.end() ? 0 : extra->second), s.in_prompt);
    }
    for (const auto& [token, count] : on_path)
      if (!seen.tokens().count(token)) penalise(token, count, false);
  }
  if (output_index < params.min_tokens) {
    for (int32_t token : eos_ids) at(token).after = -std::numeric_limits<float>::infinity();
    for (int32_t token : params.stop_token_ids) at(token).after = -std::numeric_limits<float>::infinity();
  }
  std::vector<LogitAdjustment> out;
  out.reserve(by_token.size());
  for (const auto& [token, a] : by_token) out.push_back(a);
  return out;
}

void apply_logit_adjustments(float* row, int64_t vocab, std::span<const LogitAdjustment> adjustments) {
  for (const LogitAdjustment& a : adjustments) {
    if (a.token < 0 || a.token >= vocab) continue;
    float y = row[a.token] + a.before;
    y = y > 0.0f ? y / a.positive_divisor : y * a.negative_factor;
    row[a.token] = y + a.after;
  }
}

}  // namespace drift
