#include "core/model/rope_frequencies.h"

#include <algorithm>
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

// YaRN (transformers' _compute_yarn_parameters): frequencies that turn fewer than beta_slow times
// over the original context are interpolated (divided by factor), those turning more than
// beta_fast times kept, with a linear ramp between; cos and sin are scaled by the attention
// factor. fp32 where transformers computes in fp32 tensors, double where it uses Python floats.
RopeFrequencies yarn_frequencies(const RopeConfig& rope, int64_t head_dim) {
  const double dim = static_cast<double>(head_dim), base = rope.theta;
  const double original = static_cast<double>(rope.original_max_position);
  auto correction_dim = [&](double rotations) {
    return dim * std::log(original / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
  };
  double low = correction_dim(rope.beta_fast), high = correction_dim(rope.beta_slow);
  if (rope.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1.0);
  if (low == high) high += 0.001;  // transformers: prevents a division by zero
  const auto low_f = static_cast<float>(low), span_f = static_cast<float>(high - low);
  RopeFrequencies out;
  out.inv_freq.resize(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const float pos_freq = std::pow(static_cast<float>(base), static_cast<float>(2 * i) / static_cast<float>(head_dim));
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (static_cast<float>(rope.factor) * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - low_f) / span_f, 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // the share of the unscaled frequency
    out.inv_freq[i] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
  const double factor = rope.attention_factor > 0 ? rope.attention_factor
                        : rope.factor <= 1.0      ? 1.0
                                                  : 0.1 * std::log(rope.factor) + 1.0;
  out.attention_scale = static_cast<float>(factor);
  return out;
}

}  // namespace

RopeFrequencies compute_rope_frequencies(const RopeConfig& rope, int64_t head_dim) {
  if (rope.type == RopeType::Yarn) return yarn_frequencies(rope, head_dim);
  RopeFrequencies out;
  out.inv_freq = default_inv_freq(rope.theta, head_dim);
  switch (rope.type) {
    case RopeType::Default: break;
    case RopeType::Linear:
      for (float& f : out.inv_freq) f = static_cast<float>(f / rope.factor);
      break;
    case RopeType::Llama3: apply_llama3_scaling(out.inv_freq, rope); break;
    case RopeType::Yarn:
      break;  // above
  }
  return out;
}

}  // namespace drift
