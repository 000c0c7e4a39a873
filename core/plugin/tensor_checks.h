#pragma once
// Argument checks shared by the host services that take drift_tensor_t arguments (compute
// primitives, page summaries): a service validates every tensor -- present, sane shape, on the
// backend's device, of an expected dtype, row-major contiguous, with data -- and refuses with a status and
// one log line naming the service, the argument and its shape instead of computing.
// Internal to core/plugin/.
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/plugin/host_services.h"
#include "drift/plugin.h"

namespace drift::tensor_checks {

// A refused call: the status to answer and why. Only the guard below sees it; anything else a
// callback throws (DriftError from the backend, bad_alloc) reaches the thunk and is DRIFT_ERROR.
class Refusal : public std::runtime_error {
 public:
  Refusal(drift_status_t status, const std::string& what) : std::runtime_error(what), status(status) {}
  drift_status_t status;
};

template <typename... Args>
[[noreturn]] void refuse(drift_status_t status, fmt::format_string<Args...> format, Args&&... args) {
  throw Refusal(status, fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
[[noreturn]] void invalid(fmt::format_string<Args...> format, Args&&... args) {
  throw Refusal(DRIFT_ERROR_INVALID_ARGUMENT, fmt::format(format, std::forward<Args>(args)...));
}

template <typename Body>
drift_status_t guarded(const char* service, Body&& body) {
  try {
    return body();
  } catch (const Refusal& r) {
    spdlog::warn("host service {}: {}", service, r.what());
    return r.status;
  }
}

const char* dtype_label(int32_t dtype);
std::string shape_of(const drift_tensor_t& t);
// Row-major contiguous, or strides left all zero ("unspecified", like DLPack's NULL strides).
bool contiguous(const drift_tensor_t& t);
// The dtypes an argument may have (one or two).
struct DTypeSet {
  explicit DTypeSet(int32_t a) : dtypes{a, a} {}
  DTypeSet(int32_t a, int32_t b) : dtypes{a, b} {}
  bool has(int32_t dtype) const { return dtype == dtypes[0] || dtype == dtypes[1]; }
  std::string label() const;
  int32_t dtypes[2];
};

// Structural checks every tensor argument gets: present, sane ndim/shape, on the CPU, of
// `dtype`, contiguous, with data unless empty. `name` is the argument's name in the header.
const drift_tensor_t& checked(const char* name, const drift_tensor_t* t, int32_t dtype);
// The same on `device` (DRIFT_DEVICE_*), of any of `dtypes`.
const drift_tensor_t& checked(const char* name, const drift_tensor_t* t, int32_t device, DTypeSet dtypes);
// Exact shape check; -1 in `expected` matches any extent.
void expect_shape(const char* name, const drift_tensor_t& t, std::initializer_list<int64_t> expected,
                  const char* what);
void expect_same_shape(const char* name, const drift_tensor_t& t, const char* other_name,
                       const drift_tensor_t& other);
int64_t last_dim(const drift_tensor_t& t);
int64_t leading_numel(const drift_tensor_t& t);
// An output may not share memory with an input, except exactly (same start, same size) where
// the header allows computing in place.
void expect_disjoint(const char* out_name, const drift_tensor_t& out, const char* in_name,
                     const drift_tensor_t& in, bool in_place_allowed);

}  // namespace drift::tensor_checks
