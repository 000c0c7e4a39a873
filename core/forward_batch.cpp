#include "core/forward_batch.h"

#include "core/error.h"
#include "core/sampler.h"

namespace drift {

void ModelExecutor::copy_window_page(int32_t, int32_t) { fail("this model executor keeps no sliding-window pages"); }
void ModelExecutor::move_window_slots(std::span<const int64_t>, std::span<const int64_t>) {
  fail("this model executor keeps no sliding-window pages");
}

std::vector<int32_t> rows_wanting_logprobs(std::span<const RowSampling> rows) {
  std::vector<int32_t> wanting;
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r].params.logprobs >= 0) wanting.push_back(static_cast<int32_t>(r));
  return wanting;
}

std::vector<TokenLogprobs> rows_logprobs(const Tensor& host_logits, std::span<const int32_t> wanting, bool gathered,
                                         std::span<const RowSampling> rows, std::span<const int32_t> picks) {
  const int64_t vocab = host_logits.dim(1);
  std::vector<TokenLogprobs> out(rows.size());
  for (size_t i = 0; i < wanting.size(); ++i) {
    const int32_t r = wanting[i];
    const float* row = host_logits.as<float>() + (gathered ? static_cast<int64_t>(i) : r) * vocab;
    out[r] = token_logprobs(row, vocab, picks[r], rows[r].params.logprobs);
  }
  return out;
}

std::vector<int32_t> ModelExecutor::forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                                  std::vector<TokenLogprobs>* logprobs,
                                                  const std::function<void()>& before_pick) {
  const Tensor logits = forward(batch);
  if (before_pick) before_pick();
  DRIFT_CHECK(logits.dim(0) == static_cast<int64_t>(rows.size()), "{} sampling settings for {} logit rows", rows.size(),
              logits.dim(0));
  const int64_t vocab = logits.dim(1);
  std::vector<int32_t> picks(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) picks[r] = sample_shaped(logits.as<float>() + r * vocab, vocab, rows[r]);
  if (const std::vector<int32_t> wanting = rows_wanting_logprobs(rows); logprobs && !wanting.empty())
    *logprobs = rows_logprobs(logits, wanting, false, rows, picks);
  return picks;
}

}  // namespace drift
