#pragma once
// The specpv plugin's checked calls into drift_host_api_t: a failing service throws
// std::runtime_error naming it and its status, which the hook boundary (specpv.cc) turns into
// that sequence's failure -- exceptions never cross the C ABI. Tensor owns a host allocation.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "drift/plugin.h"

namespace specpv {

void check(drift_status_t status, const char* service);

// A contiguous view of `base` with another shape, `offset` elements in.
drift_tensor_t view(const drift_tensor_t& base, std::vector<int64_t> shape, int64_t offset);

class Tensor {
 public:
  Tensor() = default;
  Tensor(const drift_host_api_t* host, int32_t dtype, std::vector<int64_t> shape);
  ~Tensor() { reset(); }
  Tensor(Tensor&& other) noexcept : host_(other.host_), t_(other.t_) { other.t_ = {}; }
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const drift_tensor_t& get() const { return t_; }
  bool empty() const { return t_.data == nullptr; }
  int64_t numel() const;
  void reset();

 private:
  const drift_host_api_t* host_ = nullptr;
  drift_tensor_t t_{};
};

}  // namespace specpv
