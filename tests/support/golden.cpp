#include "support/golden.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/safetensors.h"

namespace drift::test {
namespace {

std::vector<int32_t> ids_of(const TensorInfo& info) {
  const auto* p = static_cast<const int32_t*>(info.data);
  return std::vector<int32_t>(p, p + info.nbytes / sizeof(int32_t));
}

struct RowTop {
  int32_t argmax = -1;
  float margin = 0.0f;  // top-1 minus top-2 logit
};

RowTop row_top(const Tensor& logits, int64_t row) {
  const int64_t vocab = logits.dim(1);
  const float* r = logits.as<float>() + row * vocab;
  std::vector<float> top(r, r + vocab);
  std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<float>());
  return {static_cast<int32_t>(std::max_element(r, r + vocab) - r), top[0] - top[1]};
}

// Checks ours[from..] against the argmax of the engine's own teacher-forced logits.
std::string self_consistency_mismatch(const GoldenCase& c, const std::vector<int32_t>& ours, size_t from,
                                      const TeacherForcedScorer& score_own) {
  if (from >= ours.size()) return "";
  std::vector<int32_t> seq = c.prompt;
  seq.insert(seq.end(), ours.begin(), ours.end());
  const Tensor own = score_own(seq);
  for (size_t k = from; k < ours.size(); ++k) {
    const RowTop top = row_top(own, static_cast<int64_t>(c.prompt.size() - 1 + k));
    if (top.margin > kGoldenTieMargin && ours[k] != top.argmax)
      return fmt::format("token {} is {}, but the engine's own teacher-forced argmax there is {} (margin {}; the "
                         "golden stopped applying at token {})",
                         k, ours[k], top.argmax, top.margin, from - 1);
  }
  return "";
}

}  // namespace

std::vector<int32_t> GoldenCase::sequence() const {
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), output.begin(), output.end());
  return seq;
}

std::vector<GoldenCase> load_golden_cases(const std::string& model_dir) {
  std::ifstream in(model_dir + "/golden.json");
  const auto meta = nlohmann::json::parse(in);
  SafetensorsCheckpoint ckpt(model_dir + "/golden.safetensors");
  std::vector<GoldenCase> cases;
  for (size_t i = 0; i < meta["cases"].size(); ++i) {
    GoldenCase c;
    c.prompt = ids_of(ckpt.get("prompt_" + std::to_string(i)));
    c.output = ids_of(ckpt.get("output_" + std::to_string(i)));
    c.logits = to_f32(ckpt.get("logits_" + std::to_string(i)));
    cases.push_back(std::move(c));
  }
  return cases;
}

Tensor first_rows(const Tensor& t, int64_t rows) { return rows_of(t, 0, rows); }

Tensor rows_of(const Tensor& t, int64_t first, int64_t rows) {
  Tensor out = Tensor::zeros({rows, t.dim(1)});
  std::copy(t.as<float>() + first * t.dim(1), t.as<float>() + first * t.dim(1) + out.numel(), out.as<float>());
  return out;
}

double max_relative_logit_error(const Tensor& ours, const Tensor& golden) {
  constexpr double kFail = std::numeric_limits<double>::infinity();
  if (ours.shape() != golden.shape() || golden.ndim() != 2) return kFail;
  const int64_t rows = golden.dim(0), vocab = golden.dim(1);
  double worst = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = golden.as<float>() + r * vocab;
    const float* o = ours.as<float>() + r * vocab;
    double scale = 1.0, err = 0.0;
    for (int64_t v = 0; v < vocab; ++v) {
      if (!std::isfinite(o[v]) || !std::isfinite(g[v])) return kFail;
      scale = std::max(scale, static_cast<double>(std::fabs(g[v])));
      err = std::max(err, std::fabs(static_cast<double>(o[v]) - g[v]));
    }
    worst = std::max(worst, err / scale);
  }
  return worst;
}

std::string greedy_mismatch(const GoldenCase& c, const std::vector<int32_t>& ours,
                            const TeacherForcedScorer& score_own) {
  if (ours.size() != c.output.size())
    return fmt::format("the engine produced {} tokens, the golden output has {}", ours.size(), c.output.size());
  for (size_t j = 0; j < ours.size(); ++j) {
    const RowTop top = row_top(c.logits, static_cast<int64_t>(c.prompt.size() - 1 + j));
    if (top.margin > kGoldenTieMargin && ours[j] != top.argmax)
      return fmt::format("token {} is {}, but the golden teacher-forced argmax is {} (margin {}; HF generate: {})", j,
                         ours[j], top.argmax, top.margin, c.output[j]);
    if (ours[j] != c.output[j]) return self_consistency_mismatch(c, ours, j + 1, score_own);
  }
  return "";
}

}  // namespace drift::test
