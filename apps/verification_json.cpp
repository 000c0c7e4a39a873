#include "apps/verification_json.h"

namespace drift::app {

nlohmann::json verification_json(const VerificationMetrics& v) {
  return {{"full_views", v.full_views},
          {"partial_views", v.partial_views},
          {"full_verify_steps", v.full_verify_steps},
          {"full_verify_step_ms", v.full_step_ms()},
          {"partial_verify_steps", v.partial_verify_steps},
          {"partial_verify_step_ms", v.partial_step_ms()},
          {"partial_attended_fraction", v.attended_fraction()}};
}

}  // namespace drift::app
