// Host-memory tensors: the default tensor_alloc of the host services (the CPU backend's
// device memory is host memory) and small helpers on drift_tensor_t.
#include <cstdlib>
#include <cstring>

#include "core/plugin/host_services.h"

namespace drift {

size_t drift_dtype_size(int32_t dtype) {
  switch (dtype) {
    case DRIFT_DTYPE_F32: return 4;
    case DRIFT_DTYPE_F16: return 2;
    case DRIFT_DTYPE_BF16: return 2;
    case DRIFT_DTYPE_I32: return 4;
    default: return 0;
  }
}

int64_t tensor_numel(const drift_tensor_t& tensor) {
  int64_t n = 1;
  for (int32_t d = 0; d < tensor.ndim; ++d) n *= tensor.shape[d];
  return n;
}

drift_status_t alloc_host_tensor(int32_t dtype, std::span<const int64_t> shape,
                                 drift_tensor_t* out) {
  size_t element = drift_dtype_size(dtype);
  if (!out || element == 0 || shape.size() > DRIFT_MAX_DIMS) return DRIFT_ERROR_INVALID_ARGUMENT;
  drift_tensor_t t{};
  t.dtype = dtype;
  t.device = DRIFT_DEVICE_CPU;
  t.ndim = static_cast<int32_t>(shape.size());
  int64_t numel = 1;
  for (int32_t d = t.ndim - 1; d >= 0; --d) {
    if (shape[d] < 0) return DRIFT_ERROR_INVALID_ARGUMENT;
    t.shape[d] = shape[d];
    t.strides[d] = numel;
    numel *= shape[d];
  }
  // aligned_alloc needs a size that is a multiple of the alignment, and non-zero.
  size_t bytes = (static_cast<size_t>(numel) * element + 63) / 64 * 64;
  t.data = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
  if (!t.data) return DRIFT_ERROR_OUT_OF_MEMORY;
  std::memset(t.data, 0, bytes == 0 ? 64 : bytes);
  *out = t;
  return DRIFT_OK;
}

drift_tensor_t describe_tensor(const Tensor& t) {
  drift_tensor_t out{};
  out.data = const_cast<void*>(t.data());
  out.dtype = to_drift_dtype(t.dtype());
  out.device = to_drift_device(t.device());
  out.ndim = static_cast<int32_t>(t.ndim());
  int64_t stride = 1;
  for (int32_t d = out.ndim - 1; d >= 0; --d) {
    out.shape[d] = t.dim(d);
    out.strides[d] = stride;
    stride *= t.dim(d);
  }
  return out;
}

}  // namespace drift
