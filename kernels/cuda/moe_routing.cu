// Mixture-of-experts routing on the device (GPT-OSS; kernels/cpu/moe.h is the reference):
//  - moe_route: each row's top experts_per_token router logits (ties: the lower expert id, as
//    torch.topk and the CPU's stable sort) and their softmax weights, one warp per row;
//  - moe_group: the (row, slot) entries ordered by expert, stably (an expert's entries keep row
//    order), with each expert's first entry: what grouped expert GEMMs read (an expert's weights
//    once for all of its rows). Deterministic: no atomics, so a forward's grouping -- and so its
//    sums -- never depends on timing.
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

constexpr int kWarp = 32;

// The larger of two (logit, expert) candidates: the larger logit, ties to the lower expert. A NaN
// logit counts as -inf, so every slot still names a real expert (and its entry is computed).
__device__ __forceinline__ void keep_best(float& value, int& expert, float other_value, int other_expert) {
  if (isnan(other_value)) other_value = -INFINITY;
  if (other_value > value || (other_value == value && other_expert < expert)) {
    value = other_value;
    expert = other_expert;
  }
}

__global__ void route_kernel(const float* logits, int64_t rows, int64_t experts, int64_t k, int32_t* expert_ids,
                             float* weights) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const float* r = logits + row * experts;
  float chosen_logit[kMaxExpertsPerToken];
  int chosen[kMaxExpertsPerToken];
  for (int64_t slot = 0; slot < k; ++slot) {
    float best = -INFINITY;
    int best_expert = INT32_MAX;
    for (int64_t e = lane; e < experts; e += kWarp) {
      bool taken = false;
      for (int64_t s = 0; s < slot; ++s) taken |= chosen[s] == e;
      if (!taken) keep_best(best, best_expert, r[e], static_cast<int>(e));
    }
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
      keep_best(best, best_expert, __shfl_xor_sync(0xffffffffu, best, offset),
                __shfl_xor_sync(0xffffffffu, best_expert, offset));
    chosen_logit[slot] = best;
    chosen[slot] = best_expert;
  }
  if (lane != 0) return;
  float sum = 0.0f;  // the CPU's order: shifted by the top logit, summed slot by slot
  for (int64_t slot = 0; slot < k; ++slot) sum += expf(chosen_logit[slot] - chosen_logit[0]);
  for (int64_t slot = 0; slot < k; ++slot) {
    expert_ids[row * k + slot] = chosen[slot];
    weights[row * k + slot] = expf(chosen_logit[slot] - chosen_logit[0]) / sum;
  }
}

// Warp e counts the entries of expert e.
__global__ void count_kernel(const int32_t* expert_ids, int64_t entries, int64_t experts, int32_t* counts) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (e >= experts) return;
  int32_t n = 0;
  for (int64_t base = 0; base < entries; base += kWarp) {
    const int64_t i = base + lane;
    n += __popc(__ballot_sync(0xffffffffu, i < entries && expert_ids[i] == e));
  }
  if (lane == 0) counts[e] = n;
}

// One block: offsets[e] = the entries of experts before e (offsets[experts] = all of them).
__global__ void offsets_kernel(const int32_t* counts, int64_t experts, int32_t* offsets) {
  if (threadIdx.x != 0) return;
  int32_t total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    offsets[e] = total;
    total += counts[e];
  }
  offsets[experts] = total;
}

// Warp e writes its expert's entries in entry order from offsets[e] on.
__global__ void scatter_kernel(const int32_t* expert_ids, int64_t entries, int64_t experts, const int32_t* offsets,
                               int32_t* order) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (e >= experts) return;
  int32_t next = offsets[e];
  for (int64_t base = 0; base < entries; base += kWarp) {
    const int64_t i = base + lane;
    const bool mine = i < entries && expert_ids[i] == e;
    const unsigned ballot = __ballot_sync(0xffffffffu, mine);
    if (mine) order[next + __popc(ballot & ((1u << lane) - 1u))] = static_cast<int32_t>(i);
    next += __popc(ballot);
  }
}

}  // namespace

bool moe_route(const float* logits, int64_t rows, int64_t experts, int64_t experts_per_token, int32_t* expert_ids,
               float* weights, cudaStream_t stream) {
  if (experts_per_token < 1 || experts_per_token > kMaxExpertsPerToken || experts_per_token > experts) return false;
  if (rows == 0) return true;
  constexpr int kWarpsPerBlock = 8;
  const auto blocks = static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
  route_kernel<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(logits, rows, experts, experts_per_token, expert_ids,
                                                              weights);
  return true;
}

void moe_group(const int32_t* expert_ids, int64_t entries, int64_t experts, int32_t* counts, int32_t* offsets,
               int32_t* order, cudaStream_t stream) {
  constexpr int kWarpsPerBlock = 8;
  const auto blocks = static_cast<unsigned>((experts + kWarpsPerBlock - 1) / kWarpsPerBlock);
  count_kernel<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(expert_ids, entries, experts, counts);
  offsets_kernel<<<1, kWarp, 0, stream>>>(counts, experts, offsets);
  scatter_kernel<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(expert_ids, entries, experts, offsets, order);
}

}  // namespace drift::cuda
