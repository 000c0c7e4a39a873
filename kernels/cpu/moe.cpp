#include "kernels/cpu/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cpu/dot.h"
#include "kernels/cpu/parallel.h"

namespace drift::cpu {
namespace {

struct Choice {
  int64_t expert;
  float weight;
};

// The row's experts and their weights: the largest router logits, softmax over them.
std::vector<Choice> route(const MoeArgs& a, const float* x) {
  std::vector<float> logits(a.experts);
  for (int64_t e = 0; e < a.experts; ++e) logits[e] = dot(x, a.router + e * a.hidden, a.hidden) + a.router_bias[e];
  std::vector<int64_t> order(a.experts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return logits[l] > logits[r]; });
  std::vector<Choice> chosen(a.experts_per_token);
  const float top = logits[order[0]];
  float sum = 0.0f;
  for (int64_t k = 0; k < a.experts_per_token; ++k) {
    chosen[k] = {order[k], std::exp(logits[order[k]] - top)};
    sum += chosen[k].weight;
  }
  for (Choice& c : chosen) c.weight /= sum;
  return chosen;
}

// out += weight * expert e of x.
void add_expert(const MoeArgs& a, const float* x, const Choice& c, std::vector<float>& act, float* out) {
  const float* w = a.gate_up + c.expert * 2 * a.inter * a.hidden;
  const float* b = a.gate_up_bias + c.expert * 2 * a.inter;
  for (int64_t j = 0; j < a.inter; ++j) {
    const float gate = std::min(b[2 * j] + dot(x, w + 2 * j * a.hidden, a.hidden), a.limit);
    const float up = std::clamp(b[2 * j + 1] + dot(x, w + (2 * j + 1) * a.hidden, a.hidden), -a.limit, a.limit);
    act[j] = (up + 1.0f) * (gate / (1.0f + std::exp(-a.alpha * gate)));
  }
  const float* down = a.down + c.expert * a.hidden * a.inter;
  const float* down_bias = a.down_bias + c.expert * a.hidden;
  for (int64_t d = 0; d < a.hidden; ++d)
    out[d] += c.weight * (down_bias[d] + dot(act.data(), down + d * a.inter, a.inter));
}

}  // namespace

void moe_mlp(const MoeArgs& a) {
  const int64_t work = a.experts_per_token * a.hidden * a.inter * 3;
  parallel_for(a.rows, std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, work)),
               [&](int64_t begin, int64_t end) {
                 std::vector<float> act(a.inter);
                 for (int64_t r = begin; r < end; ++r) {
                   const float* x = a.x + r * a.hidden;
                   float* out = a.out + r * a.hidden;
                   std::fill(out, out + a.hidden, 0.0f);
                   for (const Choice& c : route(a, x)) add_expert(a, x, c, act, out);
                 }
               });
}

}  // namespace drift::cpu
