#pragma once
// Hopper's warpgroup MMA (wgmma, sm_90a only), the shapes flash_prefill_wgmma.cu issues. A
// warpgroup (4 warps, 128 threads) multiplies a 64-row A by a B read by the tensor cores straight
// from shared memory. Accumulators use the m16n8 C-fragment layout of mma.sync, repeated: warp w
// of the group holds rows 16w + lane / 4 (elements 0-1 of each n8 tile) and + 8 (elements 2-3),
// so the mma.sync kernels' per-row softmax code runs unchanged on them.
//
// Shared-memory operands are described by 64-bit descriptors; every tile here uses the 128-byte
// swizzle (flash_common.cuh's Swizzle128Layout): rows of 64 elements, 8-row atoms of 1024 bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace drift::cuda::wgmma {

// start: the shared address; leading / stride: byte offsets between column blocks / 8-row groups
// (what they mean depends on the operand's major-ness: see the PTX ISA's wgmma descriptors).
__device__ __forceinline__ uint64_t descriptor(uint32_t start, uint32_t leading, uint32_t stride) {
  constexpr uint64_t kSwizzle128 = uint64_t{1} << 62;
  return static_cast<uint64_t>((start & 0x3FFFF) >> 4) | static_cast<uint64_t>(leading >> 4) << 16 |
         static_cast<uint64_t>(stride >> 4) << 32 | kSwizzle128;
}

// Orders this thread's register writes (accumulators, A fragments) before the next wgmma.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}
// Shared-memory writes of the generic proxy (cp.async, st.shared) made visible to the tensor cores'
// reads (the async proxy); then a barrier.
__device__ __forceinline__ void fence_shared_writes() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Keeps the compiler from moving accesses to an accumulator across an async MMA's issue and wait.
template <int N8>
__device__ __forceinline__ void pin(float (&d)[N8][4]) {
#pragma unroll
  for (int i = 0; i < N8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
}

// Operand lists of the asm statements below: an f32 accumulator d[N / 8][4] (outputs, in the
// fragment order above) and its register list in the instruction.
#define DRIFT_WGMMA_ACC(i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
#define DRIFT_WGMMA_ACC_N64                                                                           \
  DRIFT_WGMMA_ACC(0), DRIFT_WGMMA_ACC(1), DRIFT_WGMMA_ACC(2), DRIFT_WGMMA_ACC(3), DRIFT_WGMMA_ACC(4), \
      DRIFT_WGMMA_ACC(5), DRIFT_WGMMA_ACC(6), DRIFT_WGMMA_ACC(7)
#define DRIFT_WGMMA_ACC_N128                                                                             \
  DRIFT_WGMMA_ACC_N64, DRIFT_WGMMA_ACC(8), DRIFT_WGMMA_ACC(9), DRIFT_WGMMA_ACC(10), DRIFT_WGMMA_ACC(11), \
      DRIFT_WGMMA_ACC(12), DRIFT_WGMMA_ACC(13), DRIFT_WGMMA_ACC(14), DRIFT_WGMMA_ACC(15)
#define DRIFT_WGMMA_REGS_32                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31}"
#define DRIFT_WGMMA_REGS_64                                                                                         \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, " \
  "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "  \
  "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

// d (64 x 64) += A (64 x 16, shared, K-major) * B (16 x 64, shared, K-major: stored as 64 rows of
// k). TYPE: "f16" or "bf16".
#define DRIFT_WGMMA_M64N64K16_SS(TYPE)                                                    \
  asm volatile(                                                                           \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                        \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " " DRIFT_WGMMA_REGS_32 \
      ", %32, %33, p, 1, 1, 0, 0;\n}\n"                                                   \
      : DRIFT_WGMMA_ACC_N64                                                               \
      : "l"(a), "l"(b), "r"(accumulate))
// accumulate = 0: d = A B (d's old values are not read: no zeroing before the first k step).
template <typename T>
__device__ __forceinline__ void m64n64k16_ss(float (&d)[8][4], uint64_t a, uint64_t b, int accumulate = 1) {
  if constexpr (std::is_same_v<T, __half>)
    DRIFT_WGMMA_M64N64K16_SS("f16");
  else
    DRIFT_WGMMA_M64N64K16_SS("bf16");
}

// d (64 x 128) += A (64 x 16, shared, K-major) * B (16 x 128, shared, K-major: stored as 128 rows of
// k). d as two 64-column halves (lo: columns 0-63), each in the m64n64 fragment order.
#define DRIFT_WGMMA_ACC_LO(i) "+f"(lo[i][0]), "+f"(lo[i][1]), "+f"(lo[i][2]), "+f"(lo[i][3])
#define DRIFT_WGMMA_ACC_HI(i) "+f"(hi[i][0]), "+f"(hi[i][1]), "+f"(hi[i][2]), "+f"(hi[i][3])
#define DRIFT_WGMMA_M64N128K16_SS(TYPE)                                                                   \
  asm volatile(                                                                                           \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                        \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " DRIFT_WGMMA_REGS_64                \
      ", %64, %65, p, 1, 1, 0, 0;\n}\n"                                                                   \
      : DRIFT_WGMMA_ACC_LO(0), DRIFT_WGMMA_ACC_LO(1), DRIFT_WGMMA_ACC_LO(2), DRIFT_WGMMA_ACC_LO(3),          \
        DRIFT_WGMMA_ACC_LO(4), DRIFT_WGMMA_ACC_LO(5), DRIFT_WGMMA_ACC_LO(6), DRIFT_WGMMA_ACC_LO(7),          \
        DRIFT_WGMMA_ACC_HI(0), DRIFT_WGMMA_ACC_HI(1), DRIFT_WGMMA_ACC_HI(2), DRIFT_WGMMA_ACC_HI(3),          \
        DRIFT_WGMMA_ACC_HI(4), DRIFT_WGMMA_ACC_HI(5), DRIFT_WGMMA_ACC_HI(6), DRIFT_WGMMA_ACC_HI(7)           \
      : "l"(a), "l"(b), "r"(1))
template <typename T>
__device__ __forceinline__ void m64n128k16_ss(float (&lo)[8][4], float (&hi)[8][4], uint64_t a, uint64_t b) {
  if constexpr (std::is_same_v<T, __half>)
    DRIFT_WGMMA_M64N128K16_SS("f16");
  else
    DRIFT_WGMMA_M64N128K16_SS("bf16");
}

// d (64 x 128) += A (64 x 16, registers: the m16n8k16 A fragment of the thread's warp rows) * B (16 x
// 128, shared, N-major: stored as 16 rows of n, i.e. transposed).
#define DRIFT_WGMMA_M64N128K16_RS_TN(TYPE)                                                 \
  asm volatile(                                                                            \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                         \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE " " DRIFT_WGMMA_REGS_64 \
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                      \
      : DRIFT_WGMMA_ACC_N128                                                               \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate))
// accumulate = 0: d = A B (as m64n64k16_ss).
template <typename T>
__device__ __forceinline__ void m64n128k16_rs_tn(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b,
                                                 int accumulate = 1) {
  if constexpr (std::is_same_v<T, __half>)
    DRIFT_WGMMA_M64N128K16_RS_TN("f16");
  else
    DRIFT_WGMMA_M64N128K16_RS_TN("bf16");
}

#undef DRIFT_WGMMA_M64N128K16_RS_TN
#undef DRIFT_WGMMA_M64N128K16_SS
#undef DRIFT_WGMMA_ACC_HI
#undef DRIFT_WGMMA_ACC_LO
#undef DRIFT_WGMMA_M64N64K16_SS
#undef DRIFT_WGMMA_REGS_64
#undef DRIFT_WGMMA_REGS_32
#undef DRIFT_WGMMA_ACC_N128
#undef DRIFT_WGMMA_ACC_N64
#undef DRIFT_WGMMA_ACC

}  // namespace drift::cuda::wgmma
