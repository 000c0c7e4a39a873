#include "core/forward_batch.h"

#include <algorithm>

#include "core/error.h"
#include "core/sampler.h"

namespace drift {

bool rows_want_logprobs(std::span<const RowSampling> rows) {
  return std::any_of(rows.begin(), rows.end(), [](const RowSampling& r) { return r.params.logprobs >= 0; });
}

std::vector<TokenLogprobs> rows_logprobs(const Tensor& host_logits, std::span<const RowSampling> rows,
                                         std::span<const int32_t> picks) {
  const int64_t vocab = host_logits.dim(1);
  std::vector<TokenLogprobs> out(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    if (rows[r].params.logprobs >= 0)
      out[r] = token_logprobs(host_logits.as<float>() + r * vocab, vocab, picks[r], rows[r].params.logprobs);
  return out;
}

std::vector<int32_t> ModelExecutor::forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows,
                                                  std::vector<TokenLogprobs>* logprobs) {
  const Tensor logits = forward(batch);
  DRIFT_CHECK(logits.dim(0) == static_cast<int64_t>(rows.size()), "{} sampling settings for {} logit rows", rows.size(),
              logits.dim(0));
  const int64_t vocab = logits.dim(1);
  std::vector<int32_t> picks(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    picks[r] = sample_token(logits.as<float>() + r * vocab, vocab, rows[r].params, rows[r].seed, rows[r].output_index);
  if (logprobs && rows_want_logprobs(rows)) *logprobs = rows_logprobs(logits, rows, picks);
  return picks;
}

}  // namespace drift
