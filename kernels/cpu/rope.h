#pragma once
#include <cstdint>

namespace drift::cpu {

// Rotary embedding in Hugging Face's "rotate_half" convention: dimension i pairs with i + d/2.
// x: [tokens, heads, head_dim], rotated in place; positions: [tokens]; inv_freq: [head_dim / 2];
// attention_scale multiplies cos and sin (1 for default/llama3 rope).
void rope(float* x, const int32_t* positions, const float* inv_freq, int64_t tokens, int64_t heads,
          int64_t head_dim, float attention_scale);

}  // namespace drift::cpu
