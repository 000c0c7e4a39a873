#include "checkpoint_header.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "host.h"

namespace eagle3 {

std::map<std::string, StoredTensor> read_checkpoint_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open " + path + " (EAGLE-3 heads are read from safetensors; convert a .bin checkpoint first)");
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), sizeof length);  // little-endian, as the format says
  if (!in || length == 0 || length > 100'000'000) fail(path + " is not a safetensors file (bad header length)");
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  if (!in) fail(path + " is truncated in its header");
  std::map<std::string, StoredTensor> tensors;
  try {
    const nlohmann::json header = nlohmann::json::parse(text);
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      tensors[name] = {entry.at("dtype").get<std::string>(), entry.at("shape").get<std::vector<int64_t>>()};
    }
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": malformed safetensors header: " + e.what());
  }
  return tensors;
}

}  // namespace eagle3
