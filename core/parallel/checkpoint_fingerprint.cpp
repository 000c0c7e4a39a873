#include "core/parallel/checkpoint_fingerprint.h"

#define XXH_INLINE_ALL  // header-only use of libxxhash: no run-time library to ship
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/safetensors.h"
#include "core/text_file.h"

namespace drift {

uint64_t checkpoint_fingerprint(const std::string& dir) {
  std::string described = read_text_file((std::filesystem::path(dir) / "config.json").string(), "config.json");
  const SafetensorsCheckpoint checkpoint(dir);
  std::vector<std::string> names = checkpoint.names();
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const TensorInfo& info = checkpoint.get(name);
    described += "\n" + name + " " + dtype_name(info.dtype);
    for (int64_t d : info.shape) described += " " + std::to_string(d);
  }
  return XXH3_64bits(described.data(), described.size());
}

}  // namespace drift
