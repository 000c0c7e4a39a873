#include "kernels/cuda/logit_adjustments.h"

namespace drift::cuda {
namespace {

// Plain IEEE operations in the host's order (no contraction: __fadd_rn / __fdiv_rn / __fmul_rn),
// so the device and CPU backends shape a logit to the same bits.
__global__ void adjust_logits_kernel(float* logits, int64_t vocab, const LogitAdjustmentEntry* entries, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const LogitAdjustmentEntry e = entries[i];
  float& logit = logits[e.row * vocab + e.token];
  float y = __fadd_rn(logit, e.before);
  y = y > 0.0f ? __fdiv_rn(y, e.positive_divisor) : __fmul_rn(y, e.negative_factor);
  logit = __fadd_rn(y, e.after);
}

// One thread per logit of a masked row; grid.y walks the masked rows.
__global__ void mask_logits_kernel(float* logits, int64_t vocab, const int32_t* rows, const uint32_t* masks,
                                   int64_t words) {
  const int64_t token = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (token >= vocab) return;
  const uint32_t word = masks[blockIdx.y * words + (token >> 5)];
  if (!((word >> (token & 31)) & 1u)) logits[rows[blockIdx.y] * vocab + token] = -__int_as_float(0x7f800000);
}

}  // namespace

void mask_logits(float* logits, int64_t vocab, const int32_t* rows, const uint32_t* masks, int64_t words,
                 int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>((vocab + kThreads - 1) / kThreads), static_cast<unsigned>(count));
  mask_logits_kernel<<<grid, kThreads, 0, stream>>>(logits, vocab, rows, masks, words);
}

void adjust_logits(float* logits, int64_t vocab, const LogitAdjustmentEntry* entries, int64_t count,
                   cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  adjust_logits_kernel<<<blocks, kThreads, 0, stream>>>(logits, vocab, entries, count);
}

}  // namespace drift::cuda
