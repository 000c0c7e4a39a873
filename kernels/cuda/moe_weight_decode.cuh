#pragma once
// Expert weights as the tensor-core GEMM reads them (moe_grouped_gemm.cu; the GEMV in
// moe_experts.cu has its own two-at-a-time decoding): MXFP4 -- 16 bytes of 4-bit e2m1 codes (the
// lower nibble first) and one E8M0 scale per 32 inputs of an output row -- or dense rows of the
// storage type (checkpoints that store their experts unquantized, as golden/gptoss-tiny does).
#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace drift::cuda {

constexpr int kBlockValues = 32;  // MXFP4: values sharing a scale, 16 bytes of codes

// e2m1 (sign bit 3, then 0, 0.5, 1, 1.5, 2, 3, 4, 6) as float bits: a magnitude m >= 2 is
// 2^((m >> 1) - 1) * (1 + (m & 1) / 2), m = 1 is 0.5. Integer ops only: a table indexed by the
// code would live in local memory.
__device__ __forceinline__ float e2m1(uint32_t code) {
  const uint32_t m = code & 7u;
  const uint32_t magnitude = m >= 2u ? ((126u + (m >> 1)) << 23) | ((m & 1u) << 22) : (m == 1u ? 0x3f000000u : 0u);
  return __uint_as_float(magnitude | ((code & 8u) << 28));
}

// E8M0: 2^(scale - 127); 0 is 2^-127, a subnormal (255, NaN, is refused on load).
__device__ __forceinline__ float e8m0(uint32_t scale) {
  return scale == 0u ? __uint_as_float(0x00400000u) : __uint_as_float(scale << 23);
}

// For the tensor-core GEMM: half of a row's group (16 values) loaded into registers, then stored
// to shared memory as the storage type (zeros for rows past the output).
struct Mxfp4Halves {
  const uint8_t* blocks;  // [experts, out, in / 32, 16]
  const uint8_t* scales;  // [experts, out, in / 32]
  struct Half {
    uint2 codes;
    uint32_t scale;
  };
  __device__ __forceinline__ Half half(int64_t row, int64_t groups, int64_t g, int h) const {
    return Half{*reinterpret_cast<const uint2*>(blocks + (row * groups + g) * (kBlockValues / 2) + h * 8),
                scales[row * groups + g]};
  }
  template <typename T>
  __device__ __forceinline__ void store(const Half& h, bool valid, T* dst) const {
    const float scale = e8m0(h.scale);
    const uint32_t words[2] = {h.codes.x, h.codes.y};
    uint32_t packed[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float lo = e2m1((words[i / 4] >> (8 * (i % 4))) & 15u) * scale;
      const float hi = e2m1((words[i / 4] >> (8 * (i % 4) + 4)) & 15u) * scale;
      const typename Pair<T>::type pair = pack_pair<T>(valid ? lo : 0.0f, valid ? hi : 0.0f);
      packed[i] = *reinterpret_cast<const uint32_t*>(&pair);
    }
    reinterpret_cast<uint4*>(dst)[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
    reinterpret_cast<uint4*>(dst)[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
  }
};
template <typename W>
struct DenseHalves {
  const W* weights;  // [experts, out, in]
  struct Half {
    uint4 lo, hi;
  };
  __device__ __forceinline__ Half half(int64_t row, int64_t groups, int64_t g, int h) const {
    const uint4* src = reinterpret_cast<const uint4*>(weights + (row * groups + g) * kBlockValues + h * 16);
    return Half{src[0], src[1]};
  }
  template <typename T>
  __device__ __forceinline__ void store(const Half& h, bool valid, T* dst) const {
    static_assert(sizeof(T) == sizeof(W), "dense experts are stored in the storage type");
    const uint4 zero = make_uint4(0, 0, 0, 0);
    reinterpret_cast<uint4*>(dst)[0] = valid ? h.lo : zero;
    reinterpret_cast<uint4*>(dst)[1] = valid ? h.hi : zero;
  }
};

}  // namespace drift::cuda
