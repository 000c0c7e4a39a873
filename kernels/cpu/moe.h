#pragma once
// A mixture-of-experts MLP on fp32 rows, as GPT-OSS computes it (transformers' GptOssMLP): router
// logits x router^T + bias, the top experts_per_token of them (ties: the lower expert id, as
// torch.topk), weights = softmax over the chosen logits; each chosen expert e computes
// h = gate_up[e] x + gate_up_bias[e] (gates at even, ups at odd outputs), gate = min(gate, limit),
// up = clamp(up, -limit, limit), y = down[e] ((up + 1) * gate * sigmoid(alpha * gate)) + down_bias[e],
// and the row's output is the weighted sum of its experts' y. Expert weights are stored outputs
// first, as every linear weight (transformers keeps them inputs first; the loader transposes).
#include <cstdint>

namespace drift::cpu {

struct MoeArgs {
  const float* x = nullptr;             // [rows, hidden]
  const float* router = nullptr;        // [experts, hidden]
  const float* router_bias = nullptr;   // [experts]
  const float* gate_up = nullptr;       // [experts, 2 * inter, hidden]
  const float* gate_up_bias = nullptr;  // [experts, 2 * inter]
  const float* down = nullptr;          // [experts, hidden, inter]
  const float* down_bias = nullptr;     // [experts, hidden]
  float* out = nullptr;                 // [rows, hidden]
  int64_t rows = 0, hidden = 0, inter = 0, experts = 0, experts_per_token = 0;
  float limit = 7.0f, alpha = 1.702f;
};

void moe_mlp(const MoeArgs& args);

}  // namespace drift::cpu
