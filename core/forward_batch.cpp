#include "core/forward_batch.h"

#include "core/error.h"
#include "core/sampler.h"

namespace drift {

std::vector<int32_t> ModelExecutor::forward_picks(const ForwardBatch& batch, std::span<const RowSampling> rows) {
  const Tensor logits = forward(batch);
  DRIFT_CHECK(logits.dim(0) == static_cast<int64_t>(rows.size()), "{} sampling settings for {} logit rows", rows.size(),
              logits.dim(0));
  const int64_t vocab = logits.dim(1);
  std::vector<int32_t> picks(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    picks[r] = sample_token(logits.as<float>() + r * vocab, vocab, rows[r].params, rows[r].seed, rows[r].output_index);
  return picks;
}

}  // namespace drift
