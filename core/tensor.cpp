#include "core/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace drift {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::I32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64:
      return 8;
    case DType::Bool:
    case DType::U8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "float32";
    case DType::I32: return "int32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::I64:
      return "int64";
    case DType::Bool:
      return "bool";
    case DType::U8:
      return "uint8";
  }
  return "?";
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

std::string Tensor::shape_string() const { return fmt::format("[{}]", fmt::join(shape_, ", ")); }

namespace {

// Large buffers (the KV pool, weights) come straight from the kernel as anonymous mappings: their
// pages are zero by definition and only materialise when first written, so a multi-GiB KV budget
// costs nothing at start-up (zero-filling 4 GiB up front took ~10 s). Small ones use the heap.
constexpr size_t kMappedThreshold = size_t{1} << 20;

std::shared_ptr<void> allocate_zeroed(size_t bytes) {
  if (bytes >= kMappedThreshold) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
  }
  // 64-byte alignment keeps rows vector-friendly for the CPU kernels (mappings are page-aligned).
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return std::shared_ptr<void>(p, std::free);
}

}  // namespace

Tensor Tensor::zeros(std::vector<int64_t> shape, DType dtype) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  for (int64_t d : t.shape_)
    if (d < 0) throw std::invalid_argument("Tensor::zeros: negative dimension in " + t.shape_string());
  size_t bytes = dtype_size(dtype);
  for (int64_t d : t.shape_)
    if (__builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes)) throw std::bad_alloc();
  t.owner_ = allocate_zeroed(std::max<size_t>(bytes, 1));
  t.data_ = t.owner_.get();
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
