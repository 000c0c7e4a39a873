#pragma once
// The tensor-core path of paged_attention (flash_attention.cu): head_dim 16, 32, 64 and 128 with
// query tiles. paged_attention() takes it whenever it applies, so a model's attention always runs
// through one kernel family (batch invariance holds within a family, not across them).
#include "kernels/cuda/ops.h"

namespace drift::cuda {

// Positions per split: the unit of flash-decoding's parallelism over long contexts and of the
// fixed fold order (by absolute position, whatever the batch).
constexpr int64_t kFlashSplit = 128;

bool flash_attention_supports(const PagedAttentionParams& p);
// False (launching nothing) when !flash_attention_supports(p).
bool flash_attention(const PagedAttentionParams& p, cudaStream_t stream);

}  // namespace drift::cuda
