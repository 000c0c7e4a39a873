#include "host_calls.h"

namespace specpv {

void check(drift_status_t status, const char* service) {
  if (status != DRIFT_OK)
    throw std::runtime_error(std::string(service) + " failed with status " + std::to_string(status));
}

drift_tensor_t view(const drift_tensor_t& base, std::vector<int64_t> shape, int64_t offset) {
  drift_tensor_t v = base;
  const size_t element = base.dtype == DRIFT_DTYPE_F16 || base.dtype == DRIFT_DTYPE_BF16 ? 2 : 4;
  v.data = static_cast<char*>(base.data) + offset * static_cast<int64_t>(element);
  v.ndim = static_cast<int32_t>(shape.size());
  int64_t stride = 1;
  for (int i = v.ndim - 1; i >= 0; --i) {
    v.shape[i] = shape[i];
    v.strides[i] = stride;
    stride *= shape[i];
  }
  return v;
}

Tensor::Tensor(const drift_host_api_t* host, int32_t dtype, std::vector<int64_t> shape) : host_(host) {
  check(host->tensor_alloc(host->ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), &t_), "tensor_alloc");
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    reset();
    host_ = other.host_;
    t_ = other.t_;
    other.t_ = {};
  }
  return *this;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int i = 0; i < t_.ndim; ++i) n *= t_.shape[i];
  return t_.data ? n : 0;
}

void Tensor::reset() {
  if (host_ && t_.data) host_->tensor_free(host_->ctx, &t_);
  t_ = {};
}

}  // namespace specpv
