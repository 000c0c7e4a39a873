// MXFP4 experts as gpt-oss checkpoints store them (core/model/mxfp4): e2m1 codes scaled by an E8M0
// power of two, read row by row, the lower nibble first, into the dense layout [experts, outputs,
// inputs]. End to end, golden/gptoss-tiny-mxfp4 against transformers loading the
// same checkpoint is GoldenModelTest's; its generator checked this reading of the layout against
// transformers' own (tools/gptoss/make_mxfp4_golden.py).
#include "core/model/mxfp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"

namespace drift {
namespace {

TEST(Mxfp4, ValuesAreE2m1TimesAPowerOfTwo) {
  // The OCP MX specification's e2m1 table: codes 0-7 positive, 8-15 their negatives.
  const float table[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint8_t code = 0; code < 16; ++code) {
    const float magnitude = table[code & 7];
    EXPECT_EQ(mxfp4_value(code, 127), code & 8 ? -magnitude : magnitude) << int(code);
    EXPECT_EQ(mxfp4_value(code, 130), (code & 8 ? -magnitude : magnitude) * 8.0f) << int(code);
    EXPECT_EQ(mxfp4_value(code, 0), (code & 8 ? -magnitude : magnitude) * std::ldexp(1.0f, -127)) << int(code);
  }
  EXPECT_TRUE(std::signbit(mxfp4_value(8, 127)));  // -0: the sign survives, as in transformers' table
}

TEST(Mxfp4, ExpertsAreReadRowByRowLowerNibbleFirst) {
  const int64_t experts = 2, outputs = 3, groups = 2, inputs = groups * kMxfp4Block;
  std::vector<uint8_t> blocks(experts * outputs * groups * 16), scales(experts * outputs * groups);
  // Input i of output row r of expert e gets code (e + r + i) % 16; block g the scale 120 + g + r.
  auto code_of = [](int64_t e, int64_t r, int64_t i) { return static_cast<uint8_t>((e + r + i) % 16); };
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t r = 0; r < outputs; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t block = (e * outputs + r) * groups + g;
        scales[block] = static_cast<uint8_t>(120 + g + r);
        for (int64_t j = 0; j < kMxfp4Block; j += 2) {
          const int64_t i = g * kMxfp4Block + j;
          blocks[block * 16 + j / 2] = static_cast<uint8_t>(code_of(e, r, i) | code_of(e, r, i + 1) << 4);
        }
      }
  const Tensor dense = dequantize_mxfp4_experts(RawTensor{blocks.data(), DType::U8, {experts, outputs, groups, 16}},
                                                RawTensor{scales.data(), DType::U8, {experts, outputs, groups}}, "w");
  ASSERT_EQ(dense.shape(), (std::vector<int64_t>{experts, outputs, inputs}));
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t i = 0; i < inputs; ++i)
      for (int64_t r = 0; r < outputs; ++r) {
        const auto scale = static_cast<uint8_t>(120 + i / kMxfp4Block + r);
        ASSERT_EQ(dense.as<float>()[(e * outputs + r) * inputs + i], mxfp4_value(code_of(e, r, i), scale))
            << "expert " << e << " input " << i << " output " << r;
      }
}

TEST(Mxfp4, ANanScaleIsAnErrorNamingTheBlock) {
  std::vector<uint8_t> blocks(2 * 16, 0x21), scales = {127, 255};
  try {
    dequantize_mxfp4_experts(RawTensor{blocks.data(), DType::U8, {1, 1, 2, 16}},
                             RawTensor{scales.data(), DType::U8, {1, 1, 2}}, "model.layers.0.mlp.experts.down_proj");
    ADD_FAILURE() << "a NaN scale was read";
  } catch (const DriftError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.layers.0.mlp.experts.down_proj"), std::string::npos) << what;
    EXPECT_NE(what.find("inputs [32, 64)"), std::string::npos) << what;
    EXPECT_NE(what.find("255"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace drift
