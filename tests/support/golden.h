#pragma once
// Golden cases computed by Hugging Face transformers (see ../shared/golden/README.md): prompt,
// greedy output and teacher-forced logits per case, and the comparison rules of that README.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace drift::test {

struct GoldenCase {
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;
  Tensor logits;  // [P + N - 1, vocab]: row t predicts seq[t + 1]
  std::vector<int32_t> sequence() const;
};

// All cases of a model folder (golden.safetensors + golden.json) under the test data dir.
std::vector<GoldenCase> load_golden_cases(const std::string& model_dir);

// The leading `rows` rows of a [len, vocab] tensor: an engine's score() of prompt ++ output has
// one row more than the golden logits (the prediction after the last output token).
Tensor first_rows(const Tensor& t, int64_t rows);
// Rows [first, first + rows) of a [len, cols] fp32 tensor.
Tensor rows_of(const Tensor& t, int64_t first, int64_t rows);

// Max over rows of |ours - golden| / max(1, max|golden row|): the README's tolerance is 1e-3.
// +inf when the shapes differ or any value on either side is NaN or infinite, so a broken
// forward can never pass by producing NaNs (std::max(err, NaN) would silently keep err).
double max_relative_logit_error(const Tensor& ours, const Tensor& golden);

// Top-2 gap at or below which a correct fp32 engine may pick either token (README).
constexpr float kGoldenTieMargin = 1e-3f;

// Teacher-forced next-token logits [len, vocab] of a token sequence (Engine::score).
using TeacherForcedScorer = std::function<Tensor(const std::vector<int32_t>&)>;

// Checks a greedy engine output `ours` for case `c` token by token; "" when acceptable, else what
// is wrong. While `ours` equals the golden output so far, the golden teacher-forced row is the
// model's prediction for exactly our prefix: where its top-2 margin exceeds kGoldenTieMargin our
// token must be its argmax. That argmax is HF generate's token everywhere except qwen3-tiny cases
// 3 and 4: make_golden.py calls generate(pad_token_id=0) without an attention mask, so
// transformers masks every prompt token equal to 0 during generation but not in the teacher-forced
// forward, and HF's generated token there is not the model's prediction. At the first divergence
// from the golden output the margin must be a tie or HF's token must be such a masking artefact;
// after it the golden logits describe a different sequence and no longer apply. From there the
// continuation must be self-consistent: each later token equals the argmax of `score_own` (the
// engine's teacher-forced logits over prompt ++ ours) wherever that row's margin is not a tie.
std::string greedy_mismatch(const GoldenCase& c, const std::vector<int32_t>& ours,
                            const TeacherForcedScorer& score_own);

}  // namespace drift::test
