#pragma once
// DeviceArena: the per-forward workspace. Scratch tensors are bumped out of device blocks and
// all released together at the next forward; when a forward needed more than the first block,
// the blocks are merged into one, so after the first steps a step allocates nothing (and the
// addresses repeat from step to step, as CUDA graph replay needs).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace drift::cuda_backend {

class DeviceArena {
 public:
  DeviceArena() = default;
  DeviceArena(const DeviceArena&) = delete;
  DeviceArena& operator=(const DeviceArena&) = delete;
  ~DeviceArena();

  void* allocate(size_t bytes);  // 256-byte aligned
  void reset();
  // Where the next allocation goes. A replayed forward moves past what its recording allocated,
  // so scratch taken after it (token picks, plugin services) does not overlap its outputs.
  struct Position {
    size_t block = 0, offset = 0;
  };
  Position position() const { return {current_, offset_}; }
  void move_to(Position p) {
    current_ = p.block;
    offset_ = p.offset;
  }
  size_t capacity() const;
  // Changes whenever addresses handed out after a reset may differ from before (blocks merged).
  uint64_t generation() const { return generation_; }

 private:
  struct Block {
    void* data = nullptr;
    size_t size = 0;
  };
  void release_all();

  std::vector<Block> blocks_;
  size_t current_ = 0;  // block being bumped
  size_t offset_ = 0;   // bytes used in it
  uint64_t generation_ = 0;
};

}  // namespace drift::cuda_backend
