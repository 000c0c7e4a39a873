// libFuzzer target: a sharded checkpoint's model.safetensors.index.json, parsed by
// drift::parse_safetensors_index (core/safetensors.h) into tensor -> shard file. A DriftError
// is how the parser refuses input; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto weight_map = drift::parse_safetensors_index(text, "model.safetensors.index.json");
    size_t total = 0;
    for (const auto& [tensor, shard] : weight_map) total += tensor.size() + shard.size();
    volatile size_t sink = total;
    (void)sink;
  } catch (const drift::DriftError&) {
  }
  return 0;
}
