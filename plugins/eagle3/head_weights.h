#pragma once
// HeadWeights: an EAGLE-3 head's tensors on the engine device, checked against its HeadConfig,
// with the target's embedding (and LM head) shared through host->model_weight when the head
// ships none, and d2t read into a host map from draft ids to target ids.
#include <cstdint>
#include <string>
#include <vector>

#include "head_config.h"
#include "host.h"

namespace eagle3 {

struct HeadWeights {
  Tensor fc;                             // [H, 3 * target_H]
  Tensor input_norm, hidden_norm;        // [H]
  Tensor q, k, v;                        // [heads * head_dim, 2H], [kv_heads * head_dim, 2H] x2
  Tensor o;                              // [H, heads * head_dim]
  Tensor post_norm;                      // [H]
  Tensor gate, up;                       // [I, H]
  Tensor down;                           // [H, I]
  Tensor norm;                           // [H]
  Tensor own_embed, own_lm_head;         // when the checkpoint has them
  drift_tensor_t embed{};                // [vocab, H]: own_embed or the target's
  drift_tensor_t lm_head{};              // [draft_vocab, H]: own_lm_head or the target's
  std::vector<int32_t> draft_to_target;  // draft id -> target id (d2t applied), injective
};

// Loads <dir>/model.safetensors. Every tensor the file holds must be one the head uses (t2d is
// the only one tolerated and ignored); a missing or mis-shaped tensor throws HostError naming it,
// its shape and the file.
HeadWeights load_head_weights(const Host& host, const std::string& dir, const HeadConfig& config);

}  // namespace eagle3
