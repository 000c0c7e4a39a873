#pragma once
// Golden cases computed by Hugging Face transformers (see ../shared/golden/README.md): prompt,
// greedy output and teacher-forced logits per case, and the comparison rules of that README.
#include <cstdint>
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

// Max over rows of |ours - golden| / max(1, max|golden row|): the README's tolerance is 1e-3.
double max_relative_logit_error(const Tensor& ours, const Tensor& golden);

// What a greedy engine must reproduce of a case. `prefix`: leading output tokens that must equal
// the golden output — up to (not including) the first position whose golden top-2 margin is
// <= 1e-3 (a correct engine may pick either token there) or where HF's generate itself disagrees
// with HF's teacher-forced argmax. The latter happens in qwen3-tiny cases 3 and 4: make_golden.py
// calls generate(pad_token_id=0) without an attention mask, so transformers masks every prompt
// token equal to 0 during generation but not in the teacher-forced forward. There the
// teacher-forced logits are the model's true prediction: `next_argmax` is the token a correct
// engine must produce at position `prefix`.
struct GreedyReference {
  size_t prefix = 0;
  int32_t next_argmax = -1;  // -1: no requirement at position `prefix`
};
GreedyReference greedy_reference(const GoldenCase& c);

}  // namespace drift::test
