#pragma once
// Shared-memory barriers (mbarrier, sm_80+): a counter in shared memory that completes a phase when
// its expected number of arrivals came in. Unlike __syncthreads they let warps wait for only the
// work they depend on (a staged tile, a freed buffer), so warpgroups of one block need not run in
// lockstep. Phases alternate parity 0, 1, 0, ...: a waiter names the parity of the phase it needs.
#include <cstdint>

namespace drift::cuda::mbarrier {

__device__ __forceinline__ uint32_t address(const uint64_t* bar) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(bar));
}

// Before any use, by one thread, then a block barrier.
__device__ __forceinline__ void init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(address(bar)), "r"(arrivals) : "memory");
}

// One arrival (release: this thread's earlier writes are visible to whoever waits on the phase).
__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(address(bar)) : "memory");
}

// Waits until the phase of the given parity completed (acquire).
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(address(bar)),
      "r"(parity)
      : "memory");
}

}  // namespace drift::cuda::mbarrier
