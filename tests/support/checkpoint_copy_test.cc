// The checkpoint-copy helper's own conversions, decoded back by the engine's safetensors reader
// (an independent f16/bf16 decoder): known bit patterns, round-to-nearest-even and subnormals.
#include "support/checkpoint_copy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "core/safetensors.h"
#include "support/test_data.h"

namespace drift::test {
namespace {

Tensor values(const std::vector<float>& v) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.as<float>());
  return t;
}

TEST(CheckpointCopyTest, ConvertsToKnownBitPatterns) {
  const Tensor t = values({1.0f, -2.0f, 3.14159265f, 65504.0f, 1e-7f, 1.0f + 1.0f / 2048});
  const Tensor f16 = convert_f32(t, DType::F16);
  EXPECT_EQ(f16.as<uint16_t>()[0], 0x3C00);
  EXPECT_EQ(f16.as<uint16_t>()[1], 0xC000);
  EXPECT_EQ(f16.as<uint16_t>()[2], 0x4248);  // 3.140625
  EXPECT_EQ(f16.as<uint16_t>()[3], 0x7BFF);  // largest finite half
  EXPECT_EQ(f16.as<uint16_t>()[4], 0x0002);  // subnormal: 1e-7 / 2^-24 = 1.68 -> 2
  EXPECT_EQ(f16.as<uint16_t>()[5], 0x3C00);  // exactly halfway between 1 and 1 + 2^-10: ties to even
  const Tensor bf16 = convert_f32(t, DType::BF16);
  EXPECT_EQ(bf16.as<uint16_t>()[0], 0x3F80);
  EXPECT_EQ(bf16.as<uint16_t>()[1], 0xC000);
  EXPECT_EQ(bf16.as<uint16_t>()[2], 0x4049);  // 3.140625
}

TEST(CheckpointCopyTest, WrittenShardsReadBackWithinHalfAnUlp) {
  const std::string dir = make_temp_dir("drift-ckpt-copy");
  CheckpointCopy copy;
  copy.config = {{"model_type", "llama"}};
  for (int i = 0; i < 5; ++i) copy.tensors["t" + std::to_string(i)] = values({0.1f * i - 0.3f, 7.77f, -1e-3f});
  for (DType dtype : {DType::F16, DType::BF16}) {
    write_checkpoint(dir, copy, dtype, 2);
    SafetensorsCheckpoint ckpt(dir);
    ASSERT_EQ(ckpt.names().size(), 5u);
    EXPECT_NE(ckpt.get("t0").file, ckpt.get("t4").file) << "both shards hold tensors";
    const double half_ulp = dtype == DType::F16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    for (const auto& [name, t] : copy.tensors) {
      const Tensor back = to_f32(ckpt.get(name));
      EXPECT_EQ(ckpt.get(name).dtype, dtype);
      for (int64_t i = 0; i < t.numel(); ++i)
        EXPECT_NEAR(back.as<float>()[i], t.as<float>()[i], half_ulp * std::fabs(t.as<float>()[i])) << name;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace drift::test
