#include "core/tensor.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace drift {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::I32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float32";
    case DType::I32: return "int32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
  }
  return "?";
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

std::string Tensor::shape_string() const { return fmt::format("[{}]", fmt::join(shape_, ", ")); }

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  size_t bytes = std::max<size_t>(t.nbytes(), 1);
  // 64-byte alignment keeps rows vector-friendly for the CPU kernels.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  t.owner_ = std::shared_ptr<void>(p, std::free);
  t.data_ = p;
  return t;
}

Tensor Tensor::wrap(void* data, std::vector<int64_t> shape, DType dtype, Device device,
                    std::shared_ptr<void> owner) {
  Tensor t;
  t.data_ = data;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.owner_ = std::move(owner);
  return t;
}

}  // namespace drift
