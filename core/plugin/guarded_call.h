#pragma once
// guarded_call: every call into plugin code goes through here. A plugin's status other than
// DRIFT_OK, and any exception (a C++ plugin may throw through the C boundary in practice), come
// back as a reason string; nothing propagates into the engine.
#include <exception>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "drift/plugin.h"

namespace drift {

const char* status_name(drift_status_t status);

// std::nullopt on success, else why the call failed ("returned DRIFT_ERROR (1)", "threw ...").
template <typename Call>
std::optional<std::string> guarded_call(Call&& call) noexcept {
  try {
    drift_status_t status = call();
    if (status == DRIFT_OK) return std::nullopt;
    return fmt::format("returned {} ({})", status_name(status), status);
  } catch (const std::exception& e) {
    return fmt::format("threw an exception: {}", e.what());
  } catch (...) {
    return std::string("threw a non-standard exception");
  }
}

}  // namespace drift
