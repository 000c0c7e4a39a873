#pragma once
// The tensor list of a safetensors file (its JSON header): names, dtypes and shapes, read before
// any tensor is loaded so that a head's layout is checked -- every tensor named, with the shape it
// must have -- without the engine's own reader, which plugins cannot link.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace eagle3 {

struct StoredTensor {
  std::string dtype;  // "F32", "BF16", "I64", "BOOL", ...
  std::vector<int64_t> shape;
};

// Throws HostError naming the file when it is missing or not a safetensors file.
std::map<std::string, StoredTensor> read_checkpoint_header(const std::string& path);

}  // namespace eagle3
