// Paged KV writes and moves: the forward's new K/V into their slots, copy-on-write page copies,
// and the compaction that moves accepted tree nodes behind their root.
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void write_kv_kernel(uint16_t* k_cache, uint16_t* v_cache, const uint16_t* k,
                                const uint16_t* v, const int64_t* slots, int64_t row) {
  const int64_t t = blockIdx.x;
  const int64_t slot = slots[t];
  if (slot < 0) return;  // a padding token of a recorded forward: no KV
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    k_cache[slot * row + i] = k[t * row + i];
    v_cache[slot * row + i] = v[t * row + i];
  }
}

// One thread per 4-byte word of a slot row; each walks the pairs in order, so a slot that is
// first a source and later a destination is read before it is overwritten.
__global__ void copy_slots_kernel(uint32_t* cache, int64_t slot_words, const int64_t* src, const int64_t* dst,
                                  int64_t count) {
  const int64_t word = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (word >= slot_words) return;
  for (int64_t i = 0; i < count; ++i) cache[dst[i] * slot_words + word] = cache[src[i] * slot_words + word];
}

}  // namespace

void write_kv(void* k_cache, void* v_cache, const void* k, const void* v, const int64_t* slots, int64_t tokens,
              int64_t row_elems, cudaStream_t stream) {
  if (tokens == 0) return;
  write_kv_kernel<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(
      static_cast<uint16_t*>(k_cache), static_cast<uint16_t*>(v_cache),
      static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v), slots, row_elems);
}

void copy_page(void* cache, int64_t page_bytes, int32_t src, int32_t dst, cudaStream_t stream) {
  char* base = static_cast<char*>(cache);
  cudaMemcpyAsync(base + dst * page_bytes, base + src * page_bytes, page_bytes, cudaMemcpyDeviceToDevice, stream);
}

void copy_slots(void* cache, int64_t slot_bytes, const int64_t* src, const int64_t* dst, int64_t count,
                cudaStream_t stream) {
  if (count == 0) return;
  const int64_t words = slot_bytes / 4;  // slot rows are bf16 * num_kv_heads * head_dim: a multiple of 4 bytes
  copy_slots_kernel<<<static_cast<unsigned>((words + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      static_cast<uint32_t*>(cache), words, src, dst, count);
}

}  // namespace drift::cuda
