// Mixture-of-experts routing on the device (GPT-OSS; kernels/cpu/moe.h is the reference):
//  - moe_route: each row's top experts_per_token router logits (ties: the lower expert id, as
//    torch.topk and the CPU's stable sort) and their softmax weights, one warp per row;
//  - moe_group: the (row, slot) entries ordered by expert, stably (an expert's entries keep row
//    order), with each expert's first entry and the list of experts that have any: what grouped
//    expert GEMMs read (an expert's weights once for all of its rows). Deterministic: no atomics,
//    so a forward's grouping -- and so its sums -- never depends on timing;
//  - moe_route_group: both in one block, for decode-sized batches (one launch instead of four).
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

// One warp routes one row.
__device__ void route_row(const float* logits, int64_t row, int64_t experts, int64_t k, int32_t* expert_ids,
                          float* weights) {
  const int lane = threadIdx.x % kWarp;
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

__global__ void route_kernel(const float* logits, int64_t rows, int64_t experts, int64_t k, int32_t* expert_ids,
                             float* weights) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (row < rows) route_row(logits, row, experts, k, expert_ids, weights);
}

// One warp counts the entries of expert e.
__device__ void count_expert(const int32_t* expert_ids, int64_t entries, int64_t e, int32_t* counts) {
  const int lane = threadIdx.x % kWarp;
  int32_t n = 0;
  for (int64_t base = 0; base < entries; base += kWarp) {
    const int64_t i = base + lane;
    n += __popc(__ballot_sync(0xffffffffu, i < entries && expert_ids[i] == e));
  }
  if (lane == 0) counts[e] = n;
}

__global__ void count_kernel(const int32_t* expert_ids, int64_t entries, int64_t experts, int32_t* counts) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (e < experts) count_expert(expert_ids, entries, e, counts);
}

// One thread: offsets[e] = the entries of experts before e (offsets[experts] = all of them), and
// the active list: active[0] experts with entries, their ids (ascending) from active[1].
__device__ void offsets_and_active(const int32_t* counts, int64_t experts, int32_t* offsets, int32_t* active) {
  int32_t total = 0, used = 0;
  for (int64_t e = 0; e < experts; ++e) {
    offsets[e] = total;
    total += counts[e];
    if (counts[e] > 0) active[1 + used++] = static_cast<int32_t>(e);
  }
  offsets[experts] = total;
  active[0] = used;
}

__global__ void offsets_kernel(const int32_t* counts, int64_t experts, int32_t* offsets, int32_t* active) {
  if (threadIdx.x == 0) offsets_and_active(counts, experts, offsets, active);
}

// One warp writes expert e's entries in entry order from offsets[e] on.
__device__ void scatter_expert(const int32_t* expert_ids, int64_t entries, int64_t e, const int32_t* offsets,
                               int32_t* order) {
  const int lane = threadIdx.x % kWarp;
  int32_t next = offsets[e];
  for (int64_t base = 0; base < entries; base += kWarp) {
    const int64_t i = base + lane;
    const bool mine = i < entries && expert_ids[i] == e;
    const unsigned ballot = __ballot_sync(0xffffffffu, mine);
    if (mine) order[next + __popc(ballot & ((1u << lane) - 1u))] = static_cast<int32_t>(i);
    next += __popc(ballot);
  }
}

__global__ void scatter_kernel(const int32_t* expert_ids, int64_t entries, int64_t experts, const int32_t* offsets,
                               int32_t* order) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
  if (e < experts) scatter_expert(expert_ids, entries, e, offsets, order);
}

// moe_route_group's one block: its warps route the rows, count the experts' entries, one thread
// lays out the offsets and the active list, the warps scatter. The same functions as the
// separate kernels, so the same results.
constexpr int kGroupWarps = 8;
__global__ void __launch_bounds__(kGroupWarps * kWarp)
    route_group_kernel(const float* logits, int64_t rows, int64_t experts, int64_t k, int32_t* expert_ids,
                       float* weights, int32_t* counts, int32_t* offsets, int32_t* order, int32_t* active) {
  const int warp = threadIdx.x / kWarp;
  for (int64_t row = warp; row < rows; row += kGroupWarps) route_row(logits, row, experts, k, expert_ids, weights);
  __syncthreads();  // a block's global writes are visible to the block after the barrier
  const int64_t entries = rows * k;
  for (int64_t e = warp; e < experts; e += kGroupWarps) count_expert(expert_ids, entries, e, counts);
  __syncthreads();
  if (threadIdx.x == 0) offsets_and_active(counts, experts, offsets, active);
  __syncthreads();
  for (int64_t e = warp; e < experts; e += kGroupWarps) scatter_expert(expert_ids, entries, e, offsets, order);
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
               int32_t* order, int32_t* active, cudaStream_t stream) {
  constexpr int kWarpsPerBlock = 8;
  const auto blocks = static_cast<unsigned>((experts + kWarpsPerBlock - 1) / kWarpsPerBlock);
  count_kernel<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(expert_ids, entries, experts, counts);
  offsets_kernel<<<1, kWarp, 0, stream>>>(counts, experts, offsets, active);
  scatter_kernel<<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(expert_ids, entries, experts, offsets, order);
}

bool moe_route_group(const float* logits, int64_t rows, int64_t experts, int64_t experts_per_token,
                     int32_t* expert_ids, float* weights, int32_t* counts, int32_t* offsets, int32_t* order,
                     int32_t* active, cudaStream_t stream) {
  if (experts_per_token < 1 || experts_per_token > kMaxExpertsPerToken || experts_per_token > experts) return false;
  route_group_kernel<<<1, kGroupWarps * kWarp, 0, stream>>>(logits, rows, experts, experts_per_token, expert_ids,
                                                            weights, counts, offsets, order, active);
  return true;
}

}  // namespace drift::cuda
