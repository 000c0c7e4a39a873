#pragma once
// Tensor: a typed, shaped, contiguous buffer on one device. The CPU backend stores fp32; other
// backends may hold bf16/fp16. Storage is reference-counted so weights can be shared cheaply.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace drift {

// I64, Bool and U8 exist only as stored checkpoint dtypes (an EAGLE-3 head's d2t / t2d; MXFP4
// experts' blocks and scales): to_i32 (core/safetensors.h) reads the first two into I32; MXFP4 is
// expanded by core/model/mxfp4, or kept as U8 tensors by a backend whose moe_mlp reads it
// (Backend::keeps_mxfp4). No other op takes them.
enum class DType : uint8_t { F32, F16, BF16, I32, I64, Bool, U8 };
enum class Device : uint8_t { CPU, CUDA };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-initialised host memory.
  static Tensor zeros(std::vector<int64_t> shape, DType dtype = DType::F32);
  // Wraps memory owned elsewhere (kept alive by `owner`).
  static Tensor wrap(void* data, std::vector<int64_t> shape, DType dtype, Device device,
                     std::shared_ptr<void> owner);

  bool empty() const { return data_ == nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i < 0 ? shape_.size() + i : i); }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const;
  size_t nbytes() const { return numel() * dtype_size(dtype_); }
  std::string shape_string() const;

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <typename T> T* as() { return static_cast<T*>(data_); }
  template <typename T> const T* as() const { return static_cast<const T*>(data_); }

 private:
  void* data_ = nullptr;
  std::vector<int64_t> shape_;
  DType dtype_ = DType::F32;
  Device device_ = Device::CPU;
  std::shared_ptr<void> owner_;
};

}  // namespace drift
