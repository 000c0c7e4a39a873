#pragma once
// The plugins' own figures (DRIFT_STATS_EXTENSION) as one JSON object by plugin name, for drift
// bench's and drift generate --json's reports. A plugin's text that is not JSON is kept as a string.
#include <nlohmann/json.hpp>

#include "core/engine.h"

namespace drift::app {

nlohmann::json plugin_stats_json(const Engine& engine);

}  // namespace drift::app
