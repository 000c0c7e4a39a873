#include "core/model/mxfp4.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"

namespace drift {
namespace {

constexpr std::array<float, 8> kE2m1 = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
constexpr uint8_t kNanScale = 255;

}  // namespace

void check_mxfp4_scales(const RawTensor& scales, const std::string& name) {
  DRIFT_CHECK(scales.dtype == DType::U8 && scales.shape.size() == 3,
              "{}: MXFP4 scales are uint8 [experts, outputs, groups]", name);
  const auto* bytes = static_cast<const uint8_t*>(scales.data);
  const int64_t count = scales.shape[0] * scales.shape[1] * scales.shape[2];
  const auto* nan = std::find(bytes, bytes + count, kNanScale);
  if (nan == bytes + count) return;
  const int64_t block = nan - bytes, groups = scales.shape[2], outputs = scales.shape[1];
  const int64_t g = block % groups, row = block / groups % outputs, e = block / groups / outputs;
  fail("{}: the scale of expert {}, output {}, inputs [{}, {}) is 255 (E8M0's NaN)", name, e, row, g * kMxfp4Block,
       (g + 1) * kMxfp4Block);
}

float mxfp4_value(uint8_t code, uint8_t scale) {
  const float magnitude = std::ldexp(kE2m1[code & 7], static_cast<int>(scale) - 127);
  return (code & 8) != 0 ? -magnitude : magnitude;
}

Tensor dequantize_mxfp4_experts(const RawTensor& blocks, const RawTensor& scales, const std::string& name) {
  DRIFT_CHECK(blocks.dtype == DType::U8 && scales.dtype == DType::U8, "{}: MXFP4 blocks and scales are uint8", name);
  DRIFT_CHECK(blocks.shape.size() == 4 && blocks.shape[3] == kMxfp4Block / 2 && scales.shape.size() == 3 &&
                  std::equal(scales.shape.begin(), scales.shape.end(), blocks.shape.begin()),
              "{}: MXFP4 blocks [experts, outputs, groups, 16] with scales [experts, outputs, groups]", name);
  check_mxfp4_scales(scales, name);
  const int64_t experts = blocks.shape[0], outputs = blocks.shape[1], groups = blocks.shape[2];
  const int64_t inputs = groups * kMxfp4Block;
  Tensor dense = Tensor::zeros({experts, outputs, inputs});
  float* out = dense.as<float>();
  const auto* code_bytes = static_cast<const uint8_t*>(blocks.data);
  const auto* scale_bytes = static_cast<const uint8_t*>(scales.data);
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t row = 0; row < outputs; ++row)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t block = (e * outputs + row) * groups + g;
        const uint8_t scale = scale_bytes[block];
        const uint8_t* bytes = code_bytes + block * (kMxfp4Block / 2);
        for (int64_t j = 0; j < kMxfp4Block; ++j) {
          const uint8_t code = static_cast<uint8_t>(j % 2 == 0 ? bytes[j / 2] & 15 : bytes[j / 2] >> 4);
          out[(e * outputs + row) * inputs + g * kMxfp4Block + j] = mxfp4_value(code, scale);
        }
      }
  return dense;
}

}  // namespace drift
