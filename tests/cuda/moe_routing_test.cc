// Mixture-of-experts on the device against the CPU's rule (kernels/cpu/moe.h):
//  - routing (kernels/cuda/moe_routing.cu): the largest logits, ties to the lower expert, softmax
//    over the chosen -- expert ids equal exactly, weights within fp32 rounding, over 1-4096 rows,
//    4-128 experts and top 1-4, logits with many ties; the grouping by expert is exactly the
//    stable order;
//  - the experts with MXFP4 weights (kernels/cuda/moe_experts.cu): gate_up, the clamped SwiGLU,
//    down and the weighted combine against a host reference over the same dequantized weights;
//    the same experts stored dense give the same bits.
// Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/model/mxfp4.h"
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
        // The stable grouping: entries sorted by expert, in entry order within one; the experts
        // that have entries, ascending, after their count.
        std::vector<int32_t> want_order(want_ids.size());
        std::iota(want_order.begin(), want_order.end(), 0);
        std::stable_sort(want_order.begin(), want_order.end(),
                         [&](int32_t a, int32_t b) { return want_ids[a] < want_ids[b]; });
        std::vector<int32_t> want_active(want_ids.begin(), want_ids.end());
        std::sort(want_active.begin(), want_active.end());
        want_active.erase(std::unique(want_active.begin(), want_active.end()), want_active.end());
        want_active.insert(want_active.begin(), static_cast<int32_t>(want_active.size()));
        float* d_logits = device_copy(logits);
        int32_t *d_ids = nullptr, *d_counts = nullptr, *d_offsets = nullptr, *d_order = nullptr, *d_active = nullptr;
        float* d_weights = nullptr;
        ASSERT_EQ(cudaMalloc(&d_ids, want_ids.size() * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_weights, want_ids.size() * sizeof(float)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_counts, experts * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_offsets, (experts + 1) * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_order, want_ids.size() * sizeof(int32_t)), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&d_active, (experts + 1) * sizeof(int32_t)), cudaSuccess);
        // The separate kernels (prefill) and the one-block moe_route_group (decode): the same results.
        for (bool one_block : {false, true}) {
          SCOPED_TRACE(one_block ? "moe_route_group" : "moe_route, moe_group");
          // Every output poisoned first: each run must write all of them itself.
          for (void* d : {static_cast<void*>(d_ids), static_cast<void*>(d_weights), static_cast<void*>(d_order)})
            ASSERT_EQ(cudaMemset(d, 0xff, want_ids.size() * 4), cudaSuccess);
          ASSERT_EQ(cudaMemset(d_offsets, 0xff, (experts + 1) * sizeof(int32_t)), cudaSuccess);
          ASSERT_EQ(cudaMemset(d_active, 0xff, (experts + 1) * sizeof(int32_t)), cudaSuccess);
          if (one_block) {
            ASSERT_TRUE(cuda::moe_route_group(d_logits, rows, experts, k, d_ids, d_weights, d_counts, d_offsets,
                                              d_order, d_active, nullptr));
          } else {
            ASSERT_TRUE(cuda::moe_route(d_logits, rows, experts, k, d_ids, d_weights, nullptr));
            cuda::moe_group(d_ids, rows * k, experts, d_counts, d_offsets, d_order, d_active, nullptr);
          }
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          EXPECT_EQ(host_copy(d_ids, want_ids.size()), want_ids);
          const std::vector<float> weights = host_copy(d_weights, want_weights.size());
          for (size_t i = 0; i < weights.size(); ++i) ASSERT_NEAR(weights[i], want_weights[i], 1e-6f) << "entry " << i;
          EXPECT_EQ(host_copy(d_order, want_order.size()), want_order);
          const std::vector<int32_t> offsets = host_copy(d_offsets, experts + 1);
          for (int64_t e = 0; e <= experts; ++e)
            EXPECT_EQ(offsets[e], std::count_if(want_ids.begin(), want_ids.end(), [&](int32_t id) { return id < e; }));
          EXPECT_EQ(host_copy(d_active, want_active.size()), want_active);
        }
        for (void* p : {static_cast<void*>(d_logits), static_cast<void*>(d_ids), static_cast<void*>(d_weights),
                        static_cast<void*>(d_counts), static_cast<void*>(d_offsets), static_cast<void*>(d_order),
                        static_cast<void*>(d_active)})
          cudaFree(p);
      }
  EXPECT_FALSE(cuda::moe_route(nullptr, 1, 4, 5, nullptr, nullptr, nullptr)) << "more experts per token than experts";
  EXPECT_FALSE(cuda::moe_route(nullptr, 1, 64, cuda::kMaxExpertsPerToken + 1, nullptr, nullptr, nullptr));
  EXPECT_FALSE(cuda::moe_route_group(nullptr, 1, 4, 5, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
#endif
}

#ifdef DRIFT_WITH_CUDA
uint16_t bf16_bits(float v) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Random MXFP4 experts [experts, out, in / 32, 16] and scales, and their values [experts, out, in].
struct Mxfp4Experts {
  std::vector<uint8_t> blocks, scales;
  std::vector<float> dense;
  Mxfp4Experts(int64_t experts, int64_t out, int64_t in, std::mt19937& rng) {
    const int64_t groups = in / 32;
    blocks.resize(static_cast<size_t>(experts * out * groups * 16));
    scales.resize(static_cast<size_t>(experts * out * groups));
    for (uint8_t& b : blocks) b = static_cast<uint8_t>(rng() & 0xff);
    for (uint8_t& s : scales) s = static_cast<uint8_t>(121 + rng() % 6);  // 2^-6 .. 2^-1
    dense.resize(static_cast<size_t>(experts * out * in));
    for (int64_t r = 0; r < experts * out; ++r)
      for (int64_t i = 0; i < in; ++i) {
        const uint8_t byte = blocks[(r * groups + i / 32) * 16 + (i % 32) / 2];
        dense[r * in + i] = mxfp4_value(i % 2 ? byte >> 4 : byte & 15, scales[r * groups + i / 32]);
      }
  }
};
#endif

TEST(MoeExpertsGpu, Mxfp4ExpertsSwigluAndCombineMatchTheHostReference) {
  DRIFT_CUDA_BACKEND_OR_SKIP(gpu);
#ifdef DRIFT_WITH_CUDA
  std::mt19937 rng(9);
  constexpr int64_t kHidden = 128, kInter = 64, kExperts = 16, kTop = 4;
  constexpr float kLimit = 7.0f, kAlpha = 1.702f;
  const Mxfp4Experts gate_up(kExperts, 2 * kInter, kHidden, rng), down(kExperts, kHidden, kInter, rng);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> gate_up_bias(kExperts * 2 * kInter), down_bias(kExperts * kHidden);
  for (uint16_t& b : gate_up_bias) b = bf16_bits(0.1f * normal(rng));
  for (uint16_t& b : down_bias) b = bf16_bits(0.1f * normal(rng));
  for (int64_t rows : {1, 3, 17, 64}) {
    SCOPED_TRACE(testing::Message() << rows << " rows");
    std::vector<uint16_t> x(rows * kHidden);
    for (uint16_t& v : x) v = bf16_bits(normal(rng));
    std::vector<float> logits(rows * kExperts);
    for (float& l : logits) l = normal(rng);
    std::vector<int32_t> ids(rows * kTop);
    std::vector<float> weights(ids.size());
    for (int64_t r = 0; r < rows; ++r)
      cpu_route(&logits[r * kExperts], kExperts, kTop, &ids[r * kTop], &weights[r * kTop]);
    // The host reference: each routed expert over the dequantized weights, its activation rounded
    // to bf16 as the device stores it, combined in slot order.
    std::vector<float> want(rows * kHidden, 0.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t s = 0; s < kTop; ++s) {
        const int64_t e = ids[r * kTop + s];
        std::vector<float> act(kInter);
        for (int64_t j = 0; j < kInter; ++j) {
          float h[2];
          for (int half = 0; half < 2; ++half) {
            const int64_t o = 2 * j + half;
            double sum = bf16_value(gate_up_bias[e * 2 * kInter + o]);
            for (int64_t i = 0; i < kHidden; ++i)
              sum += double(gate_up.dense[(e * 2 * kInter + o) * kHidden + i]) * bf16_value(x[r * kHidden + i]);
            h[half] = static_cast<float>(sum);
          }
          const float g = std::min(h[0], kLimit), u = std::clamp(h[1], -kLimit, kLimit);
          act[j] = bf16_value(bf16_bits((u + 1.0f) * (g / (1.0f + std::exp(-kAlpha * g)))));
        }
        for (int64_t d = 0; d < kHidden; ++d) {
          double sum = bf16_value(down_bias[e * kHidden + d]);
          for (int64_t j = 0; j < kInter; ++j) sum += double(down.dense[(e * kHidden + d) * kInter + j]) * act[j];
          want[r * kHidden + d] += weights[r * kTop + s] * static_cast<float>(sum);
        }
      }
    // The device: group, gate_up, SwiGLU, down, combine.
    const int64_t entries = rows * kTop;
    uint16_t* d_x = device_copy(x);
    int32_t* d_ids = device_copy(ids);
    float* d_weights = device_copy(weights);
    uint8_t *d_gu = device_copy(gate_up.blocks), *d_gu_s = device_copy(gate_up.scales);
    uint8_t *d_dn = device_copy(down.blocks), *d_dn_s = device_copy(down.scales);
    uint16_t *d_gu_b = device_copy(gate_up_bias), *d_dn_b = device_copy(down_bias);
    int32_t *d_counts = nullptr, *d_offsets = nullptr, *d_order = nullptr, *d_active = nullptr;
    float *d_h = nullptr, *d_y = nullptr, *d_out = nullptr;
    uint16_t *d_act = nullptr, *d_act_fused = nullptr;
    ASSERT_EQ(cudaMalloc(&d_counts, kExperts * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_offsets, (kExperts + 1) * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_order, entries * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_active, (kExperts + 1) * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_act_fused, entries * kInter * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_h, entries * 2 * kInter * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_act, entries * kInter * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_y, entries * kHidden * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_out, rows * kHidden * 4), cudaSuccess);
    cuda::moe_group(d_ids, entries, kExperts, d_counts, d_offsets, d_order, d_active, nullptr);
    const auto args = [&](const void* in, int64_t in_dim, int64_t out_dim, int64_t divisor, const void* bias) {
      cuda::ExpertGemvArgs a;
      a.x = in;
      a.in = in_dim;
      a.out = out_dim;
      a.experts = kExperts;
      a.rows_divisor = divisor;
      a.entries = entries;
      a.bias = bias;
      a.order = d_order;
      a.offsets = d_offsets;
      a.active = d_active;
      return a;
    };
    const cuda::ExpertGemvArgs gate_up_args = args(d_x, kHidden, 2 * kInter, kTop, d_gu_b);
    ASSERT_TRUE(cuda::mxfp4_expert_gemv(gate_up_args, d_gu, d_gu_s, d_h, nullptr));
    cuda::moe_swiglu(d_h, entries, kInter, kLimit, kAlpha, d_act, cuda::ElemType::BF16, nullptr);
    // The SwiGLU in the GEMV's epilogue: the same activation bits.
    ASSERT_TRUE(cuda::mxfp4_expert_gemv_swiglu(gate_up_args, d_gu, d_gu_s, kLimit, kAlpha, d_act_fused, nullptr));
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(host_copy(d_act_fused, entries * kInter), host_copy(d_act, entries * kInter));
    // Down reads each entry's own activation row: the entries are the rows here (one slot each).
    const cuda::ExpertGemvArgs down_args = args(d_act, kInter, kHidden, 1, d_dn_b);
    ASSERT_TRUE(cuda::mxfp4_expert_gemv(down_args, d_dn, d_dn_s, d_y, nullptr));
    cuda::moe_combine(d_y, d_weights, rows, kTop, kHidden, d_out, cuda::ElemType::F32, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> got = host_copy(d_out, want.size());
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    EXPECT_LE(std::sqrt(diff / norm), 1e-3);
    // The same experts stored dense (bf16 holds every MXFP4 value exactly): the same loop sums in
    // the same order, so the outputs equal bit for bit; the combine writes bf16 rows too.
    std::vector<uint16_t> gate_up_dense(gate_up.dense.size()), down_dense(down.dense.size());
    std::transform(gate_up.dense.begin(), gate_up.dense.end(), gate_up_dense.begin(), bf16_bits);
    std::transform(down.dense.begin(), down.dense.end(), down_dense.begin(), bf16_bits);
    uint16_t *d_gu_dense = device_copy(gate_up_dense), *d_dn_dense = device_copy(down_dense), *d_out16 = nullptr;
    ASSERT_EQ(cudaMalloc(&d_out16, rows * kHidden * 2), cudaSuccess);
    ASSERT_TRUE(cuda::dense_expert_gemv(gate_up_args, d_gu_dense, d_h, nullptr));
    cuda::moe_swiglu(d_h, entries, kInter, kLimit, kAlpha, d_act, cuda::ElemType::BF16, nullptr);
    ASSERT_EQ(cudaMemset(d_act_fused, 0xff, entries * kInter * 2), cudaSuccess);  // the MXFP4 run's bits: gone
    ASSERT_TRUE(cuda::dense_expert_gemv_swiglu(gate_up_args, d_gu_dense, kLimit, kAlpha, d_act_fused, nullptr));
    ASSERT_TRUE(cuda::dense_expert_gemv(down_args, d_dn_dense, d_y, nullptr));
    cuda::moe_combine(d_y, d_weights, rows, kTop, kHidden, d_out, cuda::ElemType::F32, nullptr);
    cuda::moe_combine(d_y, d_weights, rows, kTop, kHidden, d_out16, cuda::ElemType::BF16, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(host_copy(d_out, want.size()), got) << "dense experts differ from the same weights in MXFP4";
    EXPECT_EQ(host_copy(d_act_fused, entries * kInter), host_copy(d_act, entries * kInter)) << "dense SwiGLU epilogue";
    const std::vector<uint16_t> got16 = host_copy(d_out16, want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got16[i], bf16_bits(got[i])) << "bf16 output " << i;
    for (void* p : {static_cast<void*>(d_gu_dense), static_cast<void*>(d_dn_dense), static_cast<void*>(d_out16)})
      cudaFree(p);
    for (void* p :
         {static_cast<void*>(d_x), static_cast<void*>(d_ids), static_cast<void*>(d_weights), static_cast<void*>(d_gu),
          static_cast<void*>(d_gu_s), static_cast<void*>(d_dn), static_cast<void*>(d_dn_s), static_cast<void*>(d_gu_b),
          static_cast<void*>(d_dn_b), static_cast<void*>(d_counts), static_cast<void*>(d_offsets),
          static_cast<void*>(d_order), static_cast<void*>(d_h), static_cast<void*>(d_act), static_cast<void*>(d_y),
          static_cast<void*>(d_out), static_cast<void*>(d_active), static_cast<void*>(d_act_fused)})
      cudaFree(p);
  }
  cuda::ExpertGemvArgs ragged;
  ragged.in = 100;
  ragged.out = 8;
  ragged.experts = 4;
  EXPECT_FALSE(cuda::mxfp4_expert_gemv(ragged, nullptr, nullptr, nullptr, nullptr)) << "inputs not whole MXFP4 blocks";
#endif
}

// The tensor-core grouped GEMM (prefill sizes) against a host reference over the same values and
// against the GEMV: outputs that are no multiple of the 128-output tile, experts with no entries
// and experts with several 64-entry tiles, MXFP4 and the same weights dense.
TEST(MoeExpertsGpu, GroupedGemmMatchesTheHostReferenceAndTheGemv) {
  DRIFT_CUDA_BACKEND_OR_SKIP(gpu);
#ifdef DRIFT_WITH_CUDA
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  constexpr int64_t kOut = 198, kExperts = 8, kTop = 2;  // not a multiple of the tiles (128, 32, 4)
  // 96 inputs: three groups, lanes 0-2; 2880 (gpt-oss-20b's hidden): 90 groups, several a lane.
  for (int64_t kIn : {96, 2880}) {
    const Mxfp4Experts w(kExperts, kOut, kIn, rng);
    std::vector<uint16_t> dense(w.dense.size()), bias(kExperts * kOut);
    std::transform(w.dense.begin(), w.dense.end(), dense.begin(), bf16_bits);
    for (uint16_t& b : bias) b = bf16_bits(0.1f * normal(rng));
    for (int64_t rows : {33, 300}) {
      SCOPED_TRACE(testing::Message() << rows << " rows, " << kIn << " inputs");
      std::vector<uint16_t> x(rows * kIn);
      for (uint16_t& v : x) v = bf16_bits(normal(rng));
      // Experts 0-4 only (5-7 get nothing), expert 1 most: several tiles of 64 entries.
      std::vector<int32_t> ids(rows * kTop);
      for (int64_t r = 0; r < rows; ++r) {
        ids[r * kTop] = static_cast<int32_t>(r % 3 == 0 ? 1 : rng() % 5);
        do ids[r * kTop + 1] = static_cast<int32_t>(rng() % 5);
        while (ids[r * kTop + 1] == ids[r * kTop]);
      }
      const int64_t entries = rows * kTop;
      std::vector<float> want(entries * kOut);
      for (int64_t entry = 0; entry < entries; ++entry)
        for (int64_t o = 0; o < kOut; ++o) {
          const int64_t e = ids[entry];
          double sum = bf16_value(bias[e * kOut + o]);
          for (int64_t i = 0; i < kIn; ++i)
            sum += double(w.dense[(e * kOut + o) * kIn + i]) * bf16_value(x[entry / kTop * kIn + i]);
          want[entry * kOut + o] = static_cast<float>(sum);
        }
      uint16_t *d_x = device_copy(x), *d_dense = device_copy(dense), *d_bias = device_copy(bias);
      uint8_t *d_blocks = device_copy(w.blocks), *d_scales = device_copy(w.scales);
      int32_t* d_ids = device_copy(ids);
      int32_t *d_counts = nullptr, *d_offsets = nullptr, *d_order = nullptr, *d_active = nullptr;
      float* d_y = nullptr;
      ASSERT_EQ(cudaMalloc(&d_active, (kExperts + 1) * 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_counts, kExperts * 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_offsets, (kExperts + 1) * 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_order, entries * 4), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_y, entries * kOut * 4), cudaSuccess);
      cuda::moe_group(d_ids, entries, kExperts, d_counts, d_offsets, d_order, d_active, nullptr);
      auto check = [&](const char* what, const std::vector<float>& reference, double tolerance) {
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        const std::vector<float> got = host_copy(d_y, reference.size());
        double diff = 0, norm = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          diff += (got[i] - reference[i]) * (got[i] - reference[i]);
          norm += reference[i] * reference[i];
        }
        EXPECT_LE(std::sqrt(diff / norm), tolerance) << what;
      };
      ASSERT_EQ(cudaMemset(d_y, 0xff, entries * kOut * 4), cudaSuccess);  // NaNs: every output must be written
      ASSERT_TRUE(cuda::mxfp4_expert_gemm(d_x, kIn, kOut, kExperts, kTop, entries, d_blocks, d_scales, d_bias, d_order,
                                          d_offsets, d_y, cuda::ElemType::BF16, nullptr));
      check("mxfp4 grouped GEMM vs the host", want, 1e-5);
      cuda::ExpertGemvArgs a;
      a.x = d_x;
      a.in = kIn;
      a.out = kOut;
      a.experts = kExperts;
      a.rows_divisor = kTop;
      a.entries = entries;
      a.bias = d_bias;
      a.order = d_order;
      a.offsets = d_offsets;
      a.active = d_active;
      ASSERT_EQ(cudaMemset(d_y, 0xff, entries * kOut * 4), cudaSuccess);  // NaNs: the GEMV writes every output
      ASSERT_TRUE(cuda::mxfp4_expert_gemv(a, d_blocks, d_scales, d_y, nullptr));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      check("mxfp4 GEMV vs the host", want, 1e-5);
      const std::vector<float> gemv = host_copy(d_y, want.size());
      ASSERT_EQ(cudaMemset(d_y, 0xff, entries * kOut * 4), cudaSuccess);
      ASSERT_TRUE(cuda::dense_expert_gemm(d_x, kIn, kOut, kExperts, kTop, entries, d_dense, d_bias, d_order, d_offsets,
                                          d_y, cuda::ElemType::BF16, nullptr));
      check("dense grouped GEMM vs the mxfp4 GEMV", gemv, 1e-5);
      for (void* p : {static_cast<void*>(d_x), static_cast<void*>(d_dense), static_cast<void*>(d_bias),
                      static_cast<void*>(d_blocks), static_cast<void*>(d_scales), static_cast<void*>(d_ids),
                      static_cast<void*>(d_counts), static_cast<void*>(d_offsets), static_cast<void*>(d_order),
                      static_cast<void*>(d_y), static_cast<void*>(d_active)})
        cudaFree(p);
    }
  }
  EXPECT_FALSE(cuda::mxfp4_expert_gemm(nullptr, 100, 8, 4, 1, 4, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                       cuda::ElemType::BF16, nullptr))
      << "inputs not whole MXFP4 blocks";
#endif
}

}  // namespace
}  // namespace drift
