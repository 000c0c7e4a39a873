#pragma once
// Host-side fp32 -> bf16 rounding (round to nearest even, NaN kept a NaN), bit-identical to the
// device's __float2bfloat16.
#include <cstdint>

namespace drift::cuda_backend {

void round_to_bf16(const float* in, uint16_t* out, int64_t n);

}  // namespace drift::cuda_backend
