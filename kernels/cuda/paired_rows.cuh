#pragma once
// The paired-rows layout (ops.h: pair_rows) on the device: where a natural row of a span sits.
// A span of S rows (S % 16 == 0, half H = S / 2) is stored as S / 16 tiles of 16 rows; tile j holds
// natural rows 8j .. 8j+7 then H + 8j .. H + 8j+7, so rows r and r + H share a tile, 8 rows apart:
// the two output features a skinny-GEMM lane accumulates (skinny_gemm_mma.cu) are a pair.
#include <cstdint>

namespace drift::cuda {

// The physical row, within its span, of natural row r (0 <= r < span).
__host__ __device__ __forceinline__ int paired_row(int r, int span) {
  const int half = span / 2, hi = r >= half, d = r - hi * half;
  return 16 * (d / 8) + 8 * hi + d % 8;
}

// The natural row, within its span, of the first (low) row of a pair held at physical row p of a
// tile's first half (p % 16 < 8): its partner is that plus span / 2, at p + 8.
__host__ __device__ __forceinline__ int paired_low_row(int p) { return 8 * (p / 16) + p % 8; }

}  // namespace drift::cuda
