#include "support/golden.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/safetensors.h"

namespace drift::test {
namespace {

std::vector<int32_t> ids_of(const TensorInfo& info) {
  const auto* p = static_cast<const int32_t*>(info.data);
  return std::vector<int32_t>(p, p + info.nbytes / sizeof(int32_t));
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

double max_relative_logit_error(const Tensor& ours, const Tensor& golden) {
  EXPECT_EQ(ours.shape(), golden.shape());
  const int64_t rows = golden.dim(0), vocab = golden.dim(1);
  double worst = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = golden.as<float>() + r * vocab;
    const float* o = ours.as<float>() + r * vocab;
    double scale = 1.0, err = 0.0;
    for (int64_t v = 0; v < vocab; ++v) {
      scale = std::max(scale, static_cast<double>(std::fabs(g[v])));
      err = std::max(err, static_cast<double>(std::fabs(o[v] - g[v])));
    }
    worst = std::max(worst, err / scale);
  }
  return worst;
}

GreedyReference greedy_reference(const GoldenCase& c) {
  const int64_t vocab = c.logits.dim(1);
  GreedyReference ref;
  for (size_t j = 0; j < c.output.size(); ++j) {
    const float* row = c.logits.as<float>() + (c.prompt.size() - 1 + j) * vocab;
    std::vector<float> top(row, row + vocab);
    std::partial_sort(top.begin(), top.begin() + 2, top.end(), std::greater<float>());
    ref.prefix = j;
    if (top[0] - top[1] <= 1e-3f) return ref;
    const auto argmax = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    if (argmax != c.output[j]) {
      ref.next_argmax = argmax;
      return ref;
    }
  }
  ref.prefix = c.output.size();
  return ref;
}

}  // namespace drift::test
