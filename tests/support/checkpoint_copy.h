#pragma once
// Modified copies of a checkpoint for loader tests, always written into a temporary directory
// (never into the shared data): read a checkpoint's config.json and tensors (as fp32), edit them,
// and write them back as one model.safetensors or as HF-style shards with
// model.safetensors.index.json, in f32, f16 or bf16.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace drift::test {

struct CheckpointCopy {
  nlohmann::json config;                  // config.json
  std::map<std::string, Tensor> tensors;  // host fp32, by name
};

CheckpointCopy read_checkpoint(const std::string& dir);

// Writes config.json and the tensors converted to `dtype` into `dir`: model.safetensors, or
// model-0000i-of-0000n.safetensors (tensors dealt out in name order) plus the index.
void write_checkpoint(const std::string& dir, const CheckpointCopy& copy, DType dtype = DType::F32,
                      int num_shards = 1);

// An fp32 tensor converted to f16 or bf16, rounding to nearest even (f32: a copy).
Tensor convert_f32(const Tensor& t, DType dtype);

}  // namespace drift::test
