// libFuzzer target: the engine's TOML config (core/config.h). The bytes are the file's text.
// A DriftError is how the parser refuses input; any other exception, a crash or a sanitizer
// report is a finding. Configs that parse are also validated (cross-field rules).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config.h"
#include "core/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    drift::EngineConfig config = drift::parse_config(text, "fuzz.toml", "/tmp");
    drift::validate_config(config);
    (void)drift::sampling_params_from(config.generation);
  } catch (const drift::DriftError&) {
  }
  return 0;
}
