#include "core/plugin/guarded_call.h"

namespace drift {

const char* status_name(drift_status_t status) {
  switch (status) {
    case DRIFT_OK: return "DRIFT_OK";
    case DRIFT_ERROR: return "DRIFT_ERROR";
    case DRIFT_ERROR_INVALID_ARGUMENT: return "DRIFT_ERROR_INVALID_ARGUMENT";
    case DRIFT_ERROR_NOT_SUPPORTED: return "DRIFT_ERROR_NOT_SUPPORTED";
    case DRIFT_ERROR_NOT_FOUND: return "DRIFT_ERROR_NOT_FOUND";
    case DRIFT_ERROR_OUT_OF_MEMORY: return "DRIFT_ERROR_OUT_OF_MEMORY";
    default: return "an unknown status";
  }
}

}  // namespace drift
