#include "support/checkpoint_copy.h"

#include <bit>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/safetensors.h"

namespace drift::test {
namespace {

// bfloat16 keeps the top 16 bits of a binary32; add half an ulp (ties to even) before cutting.
uint16_t f32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// binary32 -> binary16, round to nearest even, with subnormals and overflow to infinity.
uint16_t f32_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t stored_exp = (bits >> 23) & 0xFFu;
  uint32_t mant = bits & 0x7FFFFFu;
  if (stored_exp == 0xFF) return sign | 0x7C00u | (mant ? 0x200u : 0u);
  const int32_t exp = static_cast<int32_t>(stored_exp) - 127 + 15;
  if (exp >= 31) return sign | 0x7C00u;
  if (exp < -10) return sign;
  uint32_t shift = 13;
  uint32_t base = (static_cast<uint32_t>(exp) << 10);
  if (exp <= 0) {  // subnormal: the implicit bit becomes explicit, shifted further right
    mant |= 0x800000u;
    shift = static_cast<uint32_t>(14 - exp);
    base = 0;
  }
  uint32_t half = base | (mant >> shift);
  const uint32_t rest = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1u))) ++half;  // a carry correctly bumps the exponent
  return static_cast<uint16_t>(sign | half);
}

std::string shard_name(int i, int n) { return fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, n); }

}  // namespace

Tensor convert_f32(const Tensor& t, DType dtype) {
  Tensor out = Tensor::zeros(t.shape(), dtype);
  const float* src = t.as<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::F32) out.as<float>()[i] = src[i];
    else if (dtype == DType::BF16) out.as<uint16_t>()[i] = f32_to_bf16(src[i]);
    else if (dtype == DType::F16) out.as<uint16_t>()[i] = f32_to_f16(src[i]);
    else fail("convert_f32: unsupported dtype {}", dtype_name(dtype));
  }
  return out;
}

CheckpointCopy read_checkpoint(const std::string& dir) {
  CheckpointCopy copy;
  std::ifstream in(dir + "/config.json");
  copy.config = nlohmann::json::parse(in);
  SafetensorsCheckpoint ckpt(dir);
  for (const auto& name : ckpt.names()) copy.tensors[name] = to_f32(ckpt.get(name));
  return copy;
}

void write_checkpoint(const std::string& dir, const CheckpointCopy& copy, DType dtype, int num_shards) {
  std::ofstream(dir + "/config.json") << copy.config.dump(2);
  std::vector<std::vector<std::pair<std::string, Tensor>>> shards(num_shards);
  nlohmann::json weight_map = nlohmann::json::object();
  int i = 0;
  for (const auto& [name, tensor] : copy.tensors) {
    const int shard = i++ * num_shards / static_cast<int>(copy.tensors.size());
    shards[shard].emplace_back(name, convert_f32(tensor, dtype));
    weight_map[name] = shard_name(shard, num_shards);
  }
  if (num_shards == 1) {
    write_safetensors(dir + "/model.safetensors", shards[0]);
    return;
  }
  for (int s = 0; s < num_shards; ++s) write_safetensors(dir + "/" + shard_name(s, num_shards), shards[s]);
  std::ofstream(dir + "/model.safetensors.index.json") << nlohmann::json{{"metadata", nlohmann::json::object()},
                                                                          {"weight_map", weight_map}}
                                                              .dump(2);
}

}  // namespace drift::test
