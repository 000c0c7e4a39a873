#pragma once
// Named block barriers (bar.sync / bar.arrive with an id and a thread count): a group of warps
// waits for another group's signal without stopping the rest of the block. Id 0 is
// __syncthreads'; callers use ids from 1. The count covers both sides: the waiting threads and
// the arriving ones, each a whole warp.
#include <cstdint>

namespace drift::cuda::named_barrier {

// Waits until `threads` threads (this warp's included) reached barrier `id`.
__device__ __forceinline__ void sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Counts this warp at barrier `id` without waiting.
__device__ __forceinline__ void arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace drift::cuda::named_barrier
