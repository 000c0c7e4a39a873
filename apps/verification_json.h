#pragma once
// The engine's verification figures (full vs partial KV views, SpecPV) as JSON, for drift
// bench's and drift generate --json's reports.
#include <nlohmann/json.hpp>

#include "core/speculation/verification_metrics.h"

namespace drift::app {

nlohmann::json verification_json(const VerificationMetrics& v);

}  // namespace drift::app
