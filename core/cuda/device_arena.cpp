#include "core/cuda/device_arena.h"

#include <algorithm>

#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"

namespace drift::cuda_backend {
namespace {

constexpr size_t kAlign = 256;
constexpr size_t kMinBlock = size_t{64} << 20;

size_t round_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

DeviceArena::~DeviceArena() { release_all(); }

void DeviceArena::release_all() {
  for (Block& b : blocks_) cudaFree(b.data);
  blocks_.clear();
}

void* DeviceArena::allocate(size_t bytes) {
  bytes = round_up(std::max<size_t>(bytes, 1));
  while (current_ < blocks_.size()) {
    if (offset_ + bytes <= blocks_[current_].size) {
      void* p = static_cast<char*>(blocks_[current_].data) + offset_;
      offset_ += bytes;
      return p;
    }
    ++current_;
    offset_ = 0;
  }
  Block block;
  block.size = std::max({bytes, kMinBlock, capacity()});
  DRIFT_CUDA(cudaMalloc(&block.data, block.size));
  blocks_.push_back(block);
  current_ = blocks_.size() - 1;
  offset_ = bytes;
  return block.data;
}

void DeviceArena::reset() {
  if (blocks_.size() > 1) {
    const size_t total = capacity();
    DRIFT_CUDA(cudaDeviceSynchronize());  // scratch may still be read by queued work
    release_all();
    Block block;
    block.size = total;
    DRIFT_CUDA(cudaMalloc(&block.data, block.size));
    blocks_.push_back(block);
    ++generation_;
  }
  current_ = 0;
  offset_ = 0;
}

size_t DeviceArena::capacity() const {
  size_t total = 0;
  for (const Block& b : blocks_) total += b.size;
  return total;
}

}  // namespace drift::cuda_backend
