#include "core/plugin/tensor_checks.h"

#include <algorithm>
#include <vector>

#include <fmt/ranges.h>

namespace drift::tensor_checks {
namespace {

std::pair<const char*, const char*> bytes_of(const drift_tensor_t& t) {
  const char* begin = static_cast<const char*>(t.data);
  return {begin, begin + tensor_numel(t) * static_cast<int64_t>(drift_dtype_size(t.dtype))};
}

}  // namespace

const char* dtype_label(int32_t dtype) {
  switch (dtype) {
    case DRIFT_DTYPE_F32: return "F32";
    case DRIFT_DTYPE_F16: return "F16";
    case DRIFT_DTYPE_BF16: return "BF16";
    case DRIFT_DTYPE_I32: return "I32";
    default: return "unknown dtype";
  }
}

std::string shape_of(const drift_tensor_t& t) {
  if (t.ndim < 0 || t.ndim > DRIFT_MAX_DIMS) return fmt::format("<ndim {}>", t.ndim);
  return fmt::format("[{}]", fmt::join(t.shape, t.shape + t.ndim, ", "));
}

bool contiguous(const drift_tensor_t& t) {
  if (std::all_of(t.strides, t.strides + t.ndim, [](int64_t s) { return s == 0; })) return true;
  int64_t expected = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

std::string DTypeSet::label() const {
  if (dtypes[0] == dtypes[1]) return dtype_label(dtypes[0]);
  return fmt::format("{} or {}", dtype_label(dtypes[0]), dtype_label(dtypes[1]));
}

const char* device_label(int32_t device) {
  return device == DRIFT_DEVICE_CPU ? "DRIFT_DEVICE_CPU" : device == DRIFT_DEVICE_CUDA ? "DRIFT_DEVICE_CUDA" : "unknown";
}

const drift_tensor_t& checked(const char* name, const drift_tensor_t* t, int32_t dtype) {
  return checked(name, t, DRIFT_DEVICE_CPU, DTypeSet(dtype));
}

const drift_tensor_t& checked(const char* name, const drift_tensor_t* t, int32_t device, DTypeSet dtypes) {
  if (!t) invalid("{} is NULL", name);
  if (t->ndim < 0 || t->ndim > DRIFT_MAX_DIMS) invalid("{} has ndim {} (0..{})", name, t->ndim, DRIFT_MAX_DIMS);
  for (int32_t d = 0; d < t->ndim; ++d)
    if (t->shape[d] < 0) invalid("{} has a negative dimension: shape {}", name, shape_of(*t));
  if (t->device != device)
    invalid("{} {} is on device {}, this backend needs {}", name, shape_of(*t), t->device, device_label(device));
  if (!dtypes.has(t->dtype))
    invalid("{} {} has dtype {}, expected {}", name, shape_of(*t), dtype_label(t->dtype), dtypes.label());
  if (!contiguous(*t))
    invalid("{} {} has strides [{}]; compute primitives take row-major contiguous tensors", name,
            shape_of(*t), fmt::join(t->strides, t->strides + t->ndim, ", "));
  if (!t->data && tensor_numel(*t) > 0) invalid("{} {} has NULL data", name, shape_of(*t));
  return *t;
}

void expect_shape(const char* name, const drift_tensor_t& t, std::initializer_list<int64_t> expected,
                  const char* what) {
  bool ok = t.ndim == static_cast<int32_t>(expected.size());
  for (size_t d = 0; ok && d < expected.size(); ++d) {
    const int64_t e = expected.begin()[d];
    ok = e < 0 || t.shape[d] == e;
  }
  if (!ok) {
    std::vector<std::string> dims;
    for (int64_t e : expected) dims.push_back(e < 0 ? std::string("*") : std::to_string(e));
    invalid("{} has shape {}, expected [{}] ({})", name, shape_of(t), fmt::join(dims, ", "), what);
  }
}

void expect_same_shape(const char* name, const drift_tensor_t& t, const char* other_name,
                       const drift_tensor_t& other) {
  if (t.ndim != other.ndim || !std::equal(t.shape, t.shape + t.ndim, other.shape))
    invalid("{} has shape {}, expected {}'s shape {}", name, shape_of(t), other_name, shape_of(other));
}

int64_t last_dim(const drift_tensor_t& t) { return t.ndim == 0 ? 1 : t.shape[t.ndim - 1]; }
int64_t leading_numel(const drift_tensor_t& t) {
  int64_t n = 1;
  for (int32_t d = 0; d + 1 < t.ndim; ++d) n *= t.shape[d];
  return n;
}

void expect_disjoint(const char* out_name, const drift_tensor_t& out, const char* in_name,
                     const drift_tensor_t& in, bool in_place_allowed) {
  auto [ob, oe] = bytes_of(out);
  auto [ib, ie] = bytes_of(in);
  if (ob == oe || ib == ie || oe <= ib || ie <= ob) return;
  if (in_place_allowed && ob == ib && oe == ie) return;
  invalid("{} {} overlaps {} {}{}", out_name, shape_of(out), in_name, shape_of(in),
          in_place_allowed ? " (only exact in-place use is allowed)" : " (in-place is not allowed here)");
}

}  // namespace drift::tensor_checks
