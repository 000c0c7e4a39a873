#pragma once
// MXFP4 (the OCP microscaling format) as gpt-oss checkpoints store their experts: each block of 32
// consecutive inputs of an output row is 16 bytes of 4-bit e2m1 codes (two a byte, the lower
// nibble first) and one E8M0 byte, the block's power-of-two scale biased by 127. A weight is
// e2m1(code) * 2^(scale - 127), exact in every float type.
#include <cstdint>
#include <string>

#include "core/backend.h"
#include "core/tensor.h"

namespace drift {

constexpr int64_t kMxfp4Block = 32;  // values sharing one scale

// One weight: the e2m1 value of `code` (0..15; bit 3 the sign) scaled by 2^(scale - 127).
float mxfp4_value(uint8_t code, uint8_t scale);

// Refuses a scale of 255 (E8M0's NaN) in scales U8 [experts, outputs, inputs / 32], naming `name`
// and the block. Every load checks: dequantize_mxfp4_experts, and a backend that keeps the 4 bits.
void check_mxfp4_scales(const RawTensor& scales, const std::string& name);

// The dense fp32 experts [experts, outputs, inputs] (as every linear weight; MoeWeights' layout)
// from blocks U8 [experts, outputs, inputs / 32, 16] and scales U8 [experts, outputs, inputs / 32].
// A scale of 255 (E8M0's NaN) is an error naming `name` and the block.
Tensor dequantize_mxfp4_experts(const RawTensor& blocks, const RawTensor& scales, const std::string& name);

}  // namespace drift
