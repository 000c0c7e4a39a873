#include "core/cuda/bf16_host.h"

#include <cstring>

namespace drift::cuda_backend {

void round_to_bf16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it quiet and a NaN
      out[i] = static_cast<uint16_t>((bits >> 16) | 0x40u);
      continue;
    }
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
}

}  // namespace drift::cuda_backend
