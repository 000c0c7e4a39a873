// Mixture-of-experts routing on the device (kernels/cuda/moe_routing.cu) against the CPU's rule
// (kernels/cpu/moe.h: the largest logits, ties to the lower expert, softmax over the chosen):
// expert ids equal exactly, weights within fp32 rounding, over 1-4096 rows, 4-128 experts and
// top 1-4, logits with many ties; and the grouping by expert is exactly the stable order.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "support/cuda_device.h"
#ifdef DRIFT_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/ops.h"
#endif

namespace drift {
namespace {

#ifdef DRIFT_WITH_CUDA
template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, std::max<size_t>(host.size(), 1) * sizeof(T)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}
template <typename T>
std::vector<T> host_copy(const T* d, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

// The CPU's routing of one row (kernels/cpu/moe.cpp's route).
void cpu_route(const float* logits, int64_t experts, int64_t k, int32_t* ids, float* weights) {
  std::vector<int64_t> order(experts);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t l, int64_t r) { return logits[l] > logits[r]; });
  float sum = 0.0f;
  for (int64_t s = 0; s < k; ++s) sum += std::exp(logits[order[s]] - logits[order[0]]);
  for (int64_t s = 0; s < k; ++s) {
    ids[s] = static_cast<int32_t>(order[s]);
    weights[s] = std::exp(logits[order[s]] - logits[order[0]]) / sum;
  }
}
#endif

TEST(MoeRoutingGpu, TopExpertsAndWeightsEqualTheCpusAndGroupStably) {
  DRIFT_CUDA_BACKEND_OR_SKIP(gpu);
#ifdef DRIFT_WITH_CUDA
  std::mt19937 rng(5);
  for (int64_t rows : {1, 7, 64, 4096})
    for (int64_t experts : {4, 32, 33, 128})
      for (int64_t k : {1, 2, 4}) {
        SCOPED_TRACE(testing::Message() << rows << " rows, " << experts << " experts, top " << k);
        // Integers halved: many exact ties, which must go to the lower expert.
        std::vector<float> logits(static_cast<size_t>(rows * experts));
        for (float& l : logits) l = static_cast<float>(static_cast<int>(rng() % 16) - 8) * 0.5f;
        std::vector<int32_t> want_ids(static_cast<size_t>(rows * k));
        std::vector<float> want_weights(want_ids.size());
        for (int64_t r = 0; r < rows; ++r)
          cpu_route(&logits[r * experts], experts, k, &want_ids[r * k], &want_weights[r * k]);
        float* d_logits = device_copy(logits);
        int32_t *d_ids = nullptr, *d_counts = nullptr, *d_offsets = nullptr, *d_order = nullptr;
        float* d_weights = nullptr;
        ASSERT_EQ(cudaMalloc(&d_ids, want_ids.size() * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_weights, want_ids.size() * sizeof(float)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_counts, experts * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_offsets, (experts + 1) * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_order, want_ids.size() * sizeof(int32_t)), cudaSuccess);
        ASSERT_TRUE(cuda::moe_route(d_logits, rows, experts, k, d_ids, d_weights, nullptr));
        cuda::moe_group(d_ids, rows * k, experts, d_counts, d_offsets, d_order, nullptr);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        EXPECT_EQ(host_copy(d_ids, want_ids.size()), want_ids);
        const std::vector<float> weights = host_copy(d_weights, want_weights.size());
        for (size_t i = 0; i < weights.size(); ++i) ASSERT_NEAR(weights[i], want_weights[i], 1e-6f) << "entry " << i;
        // The stable grouping: entries sorted by expert, in entry order within one.
        std::vector<int32_t> want_order(want_ids.size());
        std::iota(want_order.begin(), want_order.end(), 0);
        std::stable_sort(want_order.begin(), want_order.end(),
                         [&](int32_t a, int32_t b) { return want_ids[a] < want_ids[b]; });
        EXPECT_EQ(host_copy(d_order, want_order.size()), want_order);
        const std::vector<int32_t> offsets = host_copy(d_offsets, experts + 1);
        for (int64_t e = 0; e <= experts; ++e)
          EXPECT_EQ(offsets[e], std::count_if(want_ids.begin(), want_ids.end(), [&](int32_t id) { return id < e; }));
        for (void* p : {static_cast<void*>(d_logits), static_cast<void*>(d_ids), static_cast<void*>(d_weights),
                        static_cast<void*>(d_counts), static_cast<void*>(d_offsets), static_cast<void*>(d_order)})
          cudaFree(p);
      }
  EXPECT_FALSE(cuda::moe_route(nullptr, 1, 4, 5, nullptr, nullptr, nullptr)) << "more experts per token than experts";
  EXPECT_FALSE(cuda::moe_route(nullptr, 1, 64, cuda::kMaxExpertsPerToken + 1, nullptr, nullptr, nullptr));
#endif
}

}  // namespace
}  // namespace drift
