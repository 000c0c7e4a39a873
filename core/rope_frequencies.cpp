#include "core/rope_frequencies.h"

#include <cmath>
#include <numbers>

namespace drift {
namespace {

std::vector<float> default_inv_freq(double theta, int64_t head_dim) {
  std::vector<float> inv(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv[i] = 1.0f / std::pow(static_cast<float>(theta), exponent);
  }
  return inv;
}

// Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, the band between them
// interpolated smoothly.
void apply_llama3_scaling(std::vector<float>& inv, const RopeConfig& rope) {
  const double old_len = static_cast<double>(rope.original_max_position);
  const double low_wavelen = old_len / rope.low_freq_factor;
  const double high_wavelen = old_len / rope.high_freq_factor;
  for (float& f : inv) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    const float scaled = wavelen > low_wavelen ? static_cast<float>(f / rope.factor) : f;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    if (medium) {
      const float smooth = static_cast<float>((old_len / wavelen - rope.low_freq_factor) /
                                              (rope.high_freq_factor - rope.low_freq_factor));
      f = (1.0f - smooth) * scaled / static_cast<float>(rope.factor) + smooth * scaled;
    } else {
      f = scaled;
    }
  }
}

}  // namespace

RopeFrequencies compute_rope_frequencies(const RopeConfig& rope, int64_t head_dim) {
  RopeFrequencies out;
  out.inv_freq = default_inv_freq(rope.theta, head_dim);
  switch (rope.type) {
    case RopeType::Default: break;
    case RopeType::Linear:
      for (float& f : out.inv_freq) f = static_cast<float>(f / rope.factor);
      break;
    case RopeType::Llama3: apply_llama3_scaling(out.inv_freq, rope); break;
  }
  return out;
}

}  // namespace drift
