// pair_rows: a weight's rows moved into the paired-rows layout (paired_rows.cuh) when it is
// loaded. Per span, two strided copies: the low half's 8-row groups to the first half of each
// 16-row tile, the high half's to the second.
#include "kernels/cuda/ops.h"

namespace drift::cuda {

cudaError_t pair_rows(const void* stacked, void* paired, int64_t rows, int64_t row_bytes, int64_t span,
                      cudaStream_t stream) {
  const size_t group = static_cast<size_t>(8 * row_bytes), tile = 2 * group;
  const size_t half_bytes = static_cast<size_t>(span / 2 * row_bytes), groups = static_cast<size_t>(span / 16);
  const char* src = static_cast<const char*>(stacked);
  char* dst = static_cast<char*>(paired);
  for (int64_t s = 0; s < rows / span; ++s) {
    const size_t base = static_cast<size_t>(s * span * row_bytes);
    for (int hi = 0; hi < 2; ++hi)
      if (cudaError_t e = cudaMemcpy2DAsync(dst + base + hi * group, tile, src + base + hi * half_bytes, group, group,
                                            groups, cudaMemcpyDeviceToDevice, stream);
          e != cudaSuccess)
        return e;
  }
  return cudaSuccess;
}

}  // namespace drift::cuda
