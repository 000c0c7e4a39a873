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

}  // namespace

void adjust_logits(float* logits, int64_t vocab, const LogitAdjustmentEntry* entries, int64_t count,
                   cudaStream_t stream) {
  if (count == 0) return;
  constexpr int kThreads = 256;
  const auto blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  adjust_logits_kernel<<<blocks, kThreads, 0, stream>>>(logits, vocab, entries, count);
}

}  // namespace drift::cuda
