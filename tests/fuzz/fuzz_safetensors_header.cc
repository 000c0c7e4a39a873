// libFuzzer target: a whole .safetensors file (8-byte header length, JSON header, data) parsed
// from memory by drift::parse_safetensors_buffer (core/safetensors.h). Every tensor it returns
// is read in full, so an offset or size past the buffer is caught by ASan. The bytes are
// copied into a buffer of exactly their size first, so even a one-byte overrun is reported.
// A DriftError is how the parser refuses input; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> copy(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(copy.get(), data, size);
  try {
    drift::SafetensorsHeader header = drift::parse_safetensors_buffer(copy.get(), size, "fuzz.safetensors");
    uint64_t sum = 0;
    for (const auto& [name, info] : header.tensors) {
      const auto* bytes = static_cast<const uint8_t*>(info.data);
      if (info.nbytes != 0 && bytes == nullptr) __builtin_trap();  // bytes claimed, no pointer
      for (size_t i = 0; i < info.nbytes; ++i) sum += bytes[i];
      sum += name.size() + info.shape.size();
    }
    for (const auto& [key, value] : header.metadata) sum += key.size() + value.size();
    // Keep the reads from being optimised away.
    volatile uint64_t sink = sum;
    (void)sink;
  } catch (const drift::DriftError&) {
  }
  return 0;
}
