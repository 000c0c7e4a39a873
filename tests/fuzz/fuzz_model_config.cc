// libFuzzer target: a checkpoint's config.json (core/model/model_config.h). The bytes are the file's
// text. A DriftError is how the parser refuses input; any other exception (a stray
// nlohmann::json::exception included), a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/model/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    drift::ModelConfig config = drift::parse_model_config(text, "config.json");
    (void)drift::architecture_name(config.arch);
  } catch (const drift::DriftError&) {
  }
  return 0;
}
