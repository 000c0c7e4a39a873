#pragma once
// The plugins' own figures (DRIFT_STATS_EXTENSION) as one JSON object by plugin name, for drift
// bench's and drift generate --json's reports. A plugin's text that is not JSON is kept as a string.
#include <nlohmann/json.hpp>

#include "core/engine.h"

namespace drift::app {

nlohmann::json plugin_stats_json(const Engine& engine);
// What each plugin that declared its memory (ABI 1.4 declare_memory) may hold and the most it
// held, measured by the host: {"eagle3": {"declared_bytes": ..., "peak_bytes": ...}}.
nlohmann::json plugin_memory_json(const Engine& engine);

}  // namespace drift::app
