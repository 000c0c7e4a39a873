// The plugin compute services on the CUDA backend, called through the C host API exactly as a
// plugin calls them (device tensors from tensor_alloc, filled with tensor_copy), against the
// same services on the CPU backend (the fp32 oracle) fed the same bf16-rounded values, by
// normalised error; and the device's token picks (greedy and seeded sampling) against the host
// sampler over the same logits, which must agree token for token. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/cpu_backend.h"
#include "core/model/rope_frequencies.h"
#include "core/plugin/backend_callbacks.h"
#include "core/plugin/host_services.h"
#include "core/sampler.h"
#include "support/cuda_device.h"
#include "support/test_data.h"

namespace drift {
namespace {

uint16_t bf16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
}
float bf16_value(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}
float round_bf16(float v) { return bf16_value(bf16_bits(v)); }

drift_tensor_t host_view(void* data, int32_t dtype, const std::vector<int64_t>& shape) {
  drift_tensor_t t{};
  t.data = data;
  t.dtype = dtype;
  t.device = DRIFT_DEVICE_CPU;
  t.ndim = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) t.shape[d] = shape[d];
  return t;  // strides all zero: contiguous
}

// One backend and its service table, as one plugin sees it.
class Services {
 public:
  Services(std::unique_ptr<Backend> backend, const ModelConfig& model, std::optional<EngineKvAccess> kv = {})
      : backend_(std::move(backend)) {
    const RopeFrequencies rope = compute_rope_frequencies(model.rope, model.head_dim);
    if (kv)
      install_compute_callbacks(state_.callbacks, *backend_, model, rope, std::move(*kv));
    else
      install_compute_callbacks(state_.callbacks, *backend_, model, rope);
    context_ = std::make_unique<PluginContext>(backend_->name(), "", &state_);
    api = context_->api();
  }
  ~Services() {
    for (drift_tensor_t& t : owned_) api->tensor_free(api->ctx, &t);
  }
  bool device() const { return backend_->device() != Device::CPU; }
  Backend& backend() { return *backend_; }

  // A tensor of the service's device holding `values`: the activation dtype (BF16 on the GPU,
  // F32 on the CPU) unless `f32` asks for F32.
  drift_tensor_t* tensor(const std::vector<int64_t>& shape, const std::vector<float>& values, bool f32 = false) {
    const int32_t dtype = device() && !f32 ? DRIFT_DTYPE_BF16 : DRIFT_DTYPE_F32;
    drift_tensor_t* t = alloc(shape, dtype);
    if (dtype == DRIFT_DTYPE_BF16) {
      std::vector<uint16_t> bits(values.size());
      for (size_t i = 0; i < values.size(); ++i) bits[i] = bf16_bits(values[i]);
      const drift_tensor_t src = host_view(bits.data(), dtype, shape);
      EXPECT_EQ(api->tensor_copy(api->ctx, nullptr, &src, t), DRIFT_OK);
    } else {
      std::vector<float> copy = values;
      const drift_tensor_t src = host_view(copy.data(), dtype, shape);
      EXPECT_EQ(api->tensor_copy(api->ctx, nullptr, &src, t), DRIFT_OK);
    }
    return t;
  }
  drift_tensor_t* ints(const std::vector<int64_t>& shape, std::vector<int32_t> values) {
    drift_tensor_t* t = alloc(shape, DRIFT_DTYPE_I32);
    const drift_tensor_t src = host_view(values.data(), DRIFT_DTYPE_I32, shape);
    EXPECT_EQ(api->tensor_copy(api->ctx, nullptr, &src, t), DRIFT_OK);
    return t;
  }
  drift_tensor_t* alloc(const std::vector<int64_t>& shape, int32_t dtype) {
    drift_tensor_t t{};
    EXPECT_EQ(api->tensor_alloc(api->ctx, dtype, static_cast<int32_t>(shape.size()), shape.data(), &t), DRIFT_OK);
    owned_.push_back(t);
    return &owned_.back();
  }
  // A tensor's values on the host as floats (read back through tensor_copy).
  std::vector<float> read(const drift_tensor_t* t) {
    int64_t n = 1;
    for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
    const std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
    std::vector<float> out(n);
    if (t->dtype == DRIFT_DTYPE_BF16) {
      std::vector<uint16_t> bits(n);
      drift_tensor_t dst = host_view(bits.data(), t->dtype, shape);
      EXPECT_EQ(api->tensor_copy(api->ctx, nullptr, t, &dst), DRIFT_OK);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_value(bits[i]);
    } else if (t->dtype == DRIFT_DTYPE_I32) {
      std::vector<int32_t> v(n);
      drift_tensor_t dst = host_view(v.data(), t->dtype, shape);
      EXPECT_EQ(api->tensor_copy(api->ctx, nullptr, t, &dst), DRIFT_OK);
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(v[i]);
    } else {
      drift_tensor_t dst = host_view(out.data(), t->dtype, shape);
      EXPECT_EQ(api->tensor_copy(api->ctx, nullptr, t, &dst), DRIFT_OK);
    }
    return out;
  }

  const drift_host_api_t* api = nullptr;

 private:
  std::unique_ptr<Backend> backend_;
  HostState state_;
  std::unique_ptr<PluginContext> context_;
  std::deque<drift_tensor_t> owned_;  // stable addresses
};

double rel_error(const std::vector<float>& ours, const std::vector<float>& ref) {
  EXPECT_EQ(ours.size(), ref.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size() && i < ours.size(); ++i) {
    if (!std::isfinite(ours[i])) return INFINITY;
    diff += (static_cast<double>(ours[i]) - ref[i]) * (ours[i] - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

ModelConfig small_model() {
  ModelConfig m;
  m.vocab_size = 300;
  m.hidden_size = 96;
  m.intermediate_size = 160;
  m.num_layers = 2;
  m.num_heads = 8;
  m.num_kv_heads = 2;
  m.head_dim = 64;
  m.rope.type = RopeType::Llama3;
  m.rope.theta = 500000.0;
  m.rope.factor = 8.0;
  m.rope.original_max_position = 64;
  return m;
}

class PluginServicesGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto gpu = test::cuda_backend_or_null(why);
    if (!gpu) GTEST_SKIP() << why;
    gpu_ = std::make_unique<Services>(std::move(gpu), model_);
    cpu_ = std::make_unique<Services>(std::make_unique<CpuBackend>(), model_);
  }
  // bf16-representable random values, so both sides start from the same numbers.
  std::vector<float> random(int64_t n, float scale = 1.0f) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = round_bf16(dist(rng_));
    return v;
  }
  // Normal logits [rows, vocab] (scale 2.5) for the token-pick tests.
  Tensor random_logits(int64_t rows, int64_t vocab) {
    Tensor logits = Tensor::zeros({rows, vocab});
    std::normal_distribution<float> dist(0.0f, 2.5f);
    for (int64_t i = 0; i < logits.numel(); ++i) logits.as<float>()[i] = dist(rng_);
    return logits;
  }
  // The device shapes `logits` in place and picks: each pick equals the host's sample_shaped and
  // each shaped row has the host's bits (shape_row: the mask, then the adjustments).
  void expect_device_shapes_and_picks_as_the_host(const Tensor& logits, const std::vector<RowSampling>& settings) {
    Backend& gpu = gpu_->backend();
    const int64_t rows = logits.dim(0), vocab = logits.dim(1);
    Tensor on_device = gpu.alloc({rows, vocab}, DType::F32);
    gpu.copy(logits, on_device);
    const std::vector<int32_t> picks = gpu.pick_tokens(on_device, settings);
    const Tensor shaped_on_device = gpu.to_host_f32(on_device);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = logits.as<float>() + r * vocab;
      EXPECT_EQ(picks[r], sample_shaped(row, vocab, settings[r])) << "row " << r;
      if (settings[r].allowed) EXPECT_TRUE(settings[r].allowed->allows(picks[r])) << "row " << r;
      std::vector<float> shaped(row, row + vocab);
      shape_row(shaped.data(), vocab, settings[r]);
      EXPECT_EQ(std::memcmp(shaped.data(), shaped_on_device.as<float>() + r * vocab, vocab * sizeof(float)), 0)
          << "row " << r;
    }
  }
  // Both sides' output tensors of `shape` (the GPU one F32 when `f32`).
  std::pair<drift_tensor_t*, drift_tensor_t*> outputs(const std::vector<int64_t>& shape, bool f32 = false) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return {gpu_->tensor(shape, std::vector<float>(n), f32), cpu_->tensor(shape, std::vector<float>(n))};
  }

  ModelConfig model_ = small_model();
  std::unique_ptr<Services> gpu_, cpu_;
  std::mt19937 rng_{77};
};

TEST_F(PluginServicesGpuTest, GemmRmsNormRopeSiluSoftmaxEmbeddingMatchCpu) {
  for (int64_t m : {1, 5, 40}) {
    for (int64_t k : {96, 100}) {  // 16-byte loads (tensor cores) and the CUDA-core path
      for (bool f32_x : {false, true}) {
        const int64_t n = 72;
        const auto x = random(m * k), w = random(n * k, 0.1f), bias = random(n);
        auto [go, co] = outputs({m, n}, f32_x);
        ASSERT_EQ(gpu_->api->gemm(gpu_->api->ctx, nullptr, gpu_->tensor({m, k}, x, f32_x), gpu_->tensor({n, k}, w),
                                  gpu_->tensor({n}, bias), go),
                  DRIFT_OK);
        ASSERT_EQ(cpu_->api->gemm(cpu_->api->ctx, nullptr, cpu_->tensor({m, k}, x), cpu_->tensor({n, k}, w),
                                  cpu_->tensor({n}, bias), co),
                  DRIFT_OK);
        EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-2) << "gemm m " << m << " k " << k;
      }
    }
  }
  {
    const auto x = random(3 * 96, 2.0f), weight = random(96);
    auto [go, co] = outputs({3, 96}, true);
    ASSERT_EQ(
        gpu_->api->rms_norm(gpu_->api->ctx, nullptr, gpu_->tensor({3, 96}, x), gpu_->tensor({96}, weight), 1e-5f, go),
        DRIFT_OK);
    ASSERT_EQ(
        cpu_->api->rms_norm(cpu_->api->ctx, nullptr, cpu_->tensor({3, 96}, x), cpu_->tensor({96}, weight), 1e-5f, co),
        DRIFT_OK);
    EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-2) << "rms_norm";
  }
  {
    const auto x = random(5 * 8 * 64);
    const std::vector<int32_t> positions{0, 1, 17, 300, 4095};
    drift_tensor_t* gx = gpu_->tensor({5, 8, 64}, x);
    drift_tensor_t* cx = cpu_->tensor({5, 8, 64}, x);
    ASSERT_EQ(gpu_->api->rope(gpu_->api->ctx, nullptr, gx, gpu_->ints({5}, positions)), DRIFT_OK);
    ASSERT_EQ(cpu_->api->rope(cpu_->api->ctx, nullptr, cx, cpu_->ints({5}, positions)), DRIFT_OK);
    EXPECT_LT(rel_error(gpu_->read(gx), cpu_->read(cx)), 1e-2) << "rope";
  }
  {
    const auto gate = random(4 * 160), up = random(4 * 160);
    auto [go, co] = outputs({4, 160});
    ASSERT_EQ(
        gpu_->api->silu_mul(gpu_->api->ctx, nullptr, gpu_->tensor({4, 160}, gate), gpu_->tensor({4, 160}, up), go),
        DRIFT_OK);
    ASSERT_EQ(
        cpu_->api->silu_mul(cpu_->api->ctx, nullptr, cpu_->tensor({4, 160}, gate), cpu_->tensor({4, 160}, up), co),
        DRIFT_OK);
    EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-2) << "silu_mul";
  }
  {
    const auto x = random(3 * 5000, 3.0f);
    auto [go, co] = outputs({3, 5000}, true);
    ASSERT_EQ(gpu_->api->softmax(gpu_->api->ctx, nullptr, gpu_->tensor({3, 5000}, x, true), 0.7f, go), DRIFT_OK);
    ASSERT_EQ(cpu_->api->softmax(cpu_->api->ctx, nullptr, cpu_->tensor({3, 5000}, x), 0.7f, co), DRIFT_OK);
    EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-5) << "softmax";
  }
  {
    const auto table = random(300 * 96);
    const std::vector<int32_t> ids{299, 0, 7, 7};
    auto [go, co] = outputs({4, 96}, true);
    // ids from device memory here; the host-memory form is the CPU's.
    ASSERT_EQ(gpu_->api->embedding(gpu_->api->ctx, nullptr, gpu_->tensor({300, 96}, table), gpu_->ints({4}, ids), go),
              DRIFT_OK);
    ASSERT_EQ(cpu_->api->embedding(cpu_->api->ctx, nullptr, cpu_->tensor({300, 96}, table), cpu_->ints({4}, ids), co),
              DRIFT_OK);
    EXPECT_EQ(gpu_->read(go), cpu_->read(co)) << "embedding copies rows exactly";
    std::vector<int32_t> bad_ids{300};
    drift_tensor_t host_ids = host_view(bad_ids.data(), DRIFT_DTYPE_I32, {1});
    auto [g1, c1] = outputs({1, 96}, true);
    EXPECT_EQ(gpu_->api->embedding(gpu_->api->ctx, nullptr, gpu_->tensor({300, 96}, table), &host_ids, g1),
              DRIFT_ERROR_INVALID_ARGUMENT)
        << "an id outside the table is refused";
  }
}

TEST_F(PluginServicesGpuTest, TopKMatchesCpuIncludingTiesAndNaN) {
  const int64_t rows = 6, cols = 40000;
  std::vector<float> x(rows * cols);
  std::uniform_int_distribution<int> level(-50, 50);  // many exact ties
  for (float& v : x) v = static_cast<float>(level(rng_)) * 0.25f;
  x[3] = NAN;
  x[cols + 5] = -INFINITY;
  x[2 * cols + 9] = -0.0f;
  for (int32_t k : {1, 7, 64}) {
    auto [gv, cv] = outputs({rows, k}, true);
    drift_tensor_t* gi = gpu_->alloc({rows, k}, DRIFT_DTYPE_I32);
    drift_tensor_t* ci = cpu_->alloc({rows, k}, DRIFT_DTYPE_I32);
    ASSERT_EQ(gpu_->api->top_k(gpu_->api->ctx, nullptr, gpu_->tensor({rows, cols}, x, true), k, gv, gi), DRIFT_OK);
    ASSERT_EQ(cpu_->api->top_k(cpu_->api->ctx, nullptr, cpu_->tensor({rows, cols}, x), k, cv, ci), DRIFT_OK);
    EXPECT_EQ(gpu_->read(gi), cpu_->read(ci)) << "k " << k;
    EXPECT_EQ(gpu_->read(gv), cpu_->read(cv)) << "k " << k;
  }
}

TEST_F(PluginServicesGpuTest, DenseAttentionCausalAndMaskedMatchCpu) {
  const int64_t n_q = 7, n_kv = 19, heads = 8, kv_heads = 2, d = 64;
  const auto q = random(n_q * heads * d), k = random(n_kv * kv_heads * d), v = random(n_kv * kv_heads * d);
  const std::vector<int32_t> positions{12, 13, 14, 15, 16, 17, 18};
  std::vector<uint8_t> mask(n_q * n_kv);
  for (int64_t i = 0; i < n_q; ++i)
    for (int64_t j = 0; j < n_kv; ++j) mask[i * n_kv + j] = (j < 12 || (j - 12) % (i + 1) == 0) ? 1 : 0;
  for (bool masked : {false, true}) {
    auto [go, co] = outputs({n_q, heads, d});
    auto args = [&](Services& s, drift_tensor_t* out) {
      drift_attention_args_t a{};
      a.struct_size = sizeof(a);
      a.q = s.tensor({n_q, heads, d}, q);
      a.k = s.tensor({n_kv, kv_heads, d}, k);
      a.v = s.tensor({n_kv, kv_heads, d}, v);
      a.q_positions = masked ? nullptr : s.ints({n_q}, positions);
      a.mask = masked ? mask.data() : nullptr;
      a.out = out;
      return a;
    };
    drift_attention_args_t ga = args(*gpu_, go), ca = args(*cpu_, co);
    ASSERT_EQ(gpu_->api->attention(gpu_->api->ctx, nullptr, &ga), DRIFT_OK);
    ASSERT_EQ(cpu_->api->attention(cpu_->api->ctx, nullptr, &ca), DRIFT_OK);
    EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-2) << (masked ? "masked" : "causal");
  }
}

// Paged attention over an engine-like KV pool and page key summaries, with a sequence whose
// pages are out of order and whose last page is part full.
TEST_F(PluginServicesGpuTest, PagedAttentionAndPageKeySummaryOverEngineKvMatchCpu) {
  constexpr int64_t kBlock = 16, kPages = 9, kTokens = 70;
  const std::vector<drift_page_id_t> table{8, 2, 5, 0, 6};
  const int64_t slots = kBlock * kPages, kv_heads = model_.num_kv_heads, d = model_.head_dim;
  const auto keys = random(slots * kv_heads * d), values = random(slots * kv_heads * d);
  auto make = [&](Backend& s) {
    auto layers = std::make_shared<std::vector<LayerKV>>();
    for (int l = 0; l < 2; ++l) {
      Tensor host_k = Tensor::zeros({slots, kv_heads, d}), host_v = Tensor::zeros({slots, kv_heads, d});
      std::copy(keys.begin(), keys.end(), host_k.as<float>());
      std::copy(values.begin(), values.end(), host_v.as<float>());
      layers->push_back({s.upload(host_k), s.upload(host_v)});
    }
    EngineKvAccess access;
    access.kv_layers = [layers] { return layers.get(); };
    access.block_size = kBlock;
    access.block_table = [table](drift_seq_id_t seq, const drift_page_id_t** pages, int64_t* n, int64_t* tokens) {
      if (seq != 3) return static_cast<drift_status_t>(DRIFT_ERROR_NOT_FOUND);
      *pages = table.data();
      *n = static_cast<int64_t>(table.size());
      *tokens = kTokens;
      return static_cast<drift_status_t>(DRIFT_OK);
    };
    return access;
  };
  std::string why;
  Services gpu(test::cuda_backend_or_null(why), model_, make(gpu_->backend()));
  Services cpu(std::make_unique<CpuBackend>(), model_, make(cpu_->backend()));
  const int64_t n_q = 3, heads = model_.num_heads;
  const auto q = random(n_q * heads * d);
  const std::vector<int32_t> positions{40, 68, 69};
  for (std::vector<drift_page_id_t> pages : {std::vector<drift_page_id_t>{}, {5, 8, 6}}) {
    drift_tensor_t* go = gpu.tensor({n_q, heads, d}, std::vector<float>(n_q * heads * d));
    drift_tensor_t* co = cpu.tensor({n_q, heads, d}, std::vector<float>(n_q * heads * d));
    auto args = [&](Services& s, drift_tensor_t* out) {
      drift_attention_args_t a{};
      a.struct_size = sizeof(a);
      a.q = s.tensor({n_q, heads, d}, q);
      a.q_positions = s.ints({n_q}, positions);
      a.seq_id = 3;
      a.layer = 1;
      a.pages = pages.empty() ? nullptr : pages.data();
      a.num_pages = static_cast<int32_t>(pages.size());
      a.out = out;
      return a;
    };
    drift_attention_args_t ga = args(gpu, go), ca = args(cpu, co);
    ASSERT_EQ(gpu.api->attention(gpu.api->ctx, nullptr, &ga), DRIFT_OK);
    ASSERT_EQ(cpu.api->attention(cpu.api->ctx, nullptr, &ca), DRIFT_OK);
    EXPECT_LT(rel_error(gpu.read(go), cpu.read(co)), 1e-2) << pages.size() << " listed pages";
  }
  const std::vector<drift_page_id_t> summarised{6, 8, 0};  // 6 is the part-full tail
  drift_tensor_t* gmax = gpu.tensor({3, kv_heads, d}, std::vector<float>(3 * kv_heads * d), true);
  drift_tensor_t* gmin = gpu.tensor({3, kv_heads, d}, std::vector<float>(3 * kv_heads * d), true);
  drift_tensor_t* cmax = cpu.tensor({3, kv_heads, d}, std::vector<float>(3 * kv_heads * d));
  drift_tensor_t* cmin = cpu.tensor({3, kv_heads, d}, std::vector<float>(3 * kv_heads * d));
  ASSERT_EQ(gpu.api->page_key_summary(gpu.api->ctx, 3, 0, summarised.data(), 3, gmax, gmin), DRIFT_OK);
  ASSERT_EQ(cpu.api->page_key_summary(cpu.api->ctx, 3, 0, summarised.data(), 3, cmax, cmin), DRIFT_OK);
  EXPECT_EQ(gpu.read(gmax), cpu.read(cmax)) << "max of bf16 keys is exact";
  EXPECT_EQ(gpu.read(gmin), cpu.read(cmin));
  const drift_page_id_t stranger = 1;
  EXPECT_EQ(gpu.api->page_key_summary(gpu.api->ctx, 3, 0, &stranger, 1, gmax, gmin), DRIFT_ERROR_INVALID_ARGUMENT);
}

TEST_F(PluginServicesGpuTest, LoadSafetensorsGivesTheCheckpointInBf16OnTheDevice) {
  const std::string dir = test::test_data_path("golden/llama-tiny");
  ASSERT_FALSE(dir.empty());
  const char* names[] = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"};
  drift_tensor_t g[2]{}, c[2]{};
  ASSERT_EQ(gpu_->api->load_safetensors(gpu_->api->ctx, dir.c_str(), names, 2, g), DRIFT_OK);
  ASSERT_EQ(cpu_->api->load_safetensors(cpu_->api->ctx, dir.c_str(), names, 2, c), DRIFT_OK);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(g[i].device, DRIFT_DEVICE_CUDA);
    EXPECT_EQ(g[i].dtype, DRIFT_DTYPE_BF16);
    std::vector<float> expected = cpu_->read(&c[i]);
    for (float& v : expected) v = round_bf16(v);
    EXPECT_EQ(gpu_->read(&g[i]), expected) << names[i];
    gpu_->api->tensor_free(gpu_->api->ctx, &g[i]);
    cpu_->api->tensor_free(cpu_->api->ctx, &c[i]);
  }
}

// ABI 1.2's services on the device: add (bf16 and F32 operands, in place too), concat, attention
// with mask_offset, and integer checkpoint tensors (an EAGLE-3 head's d2t / t2d) as I32.
TEST_F(PluginServicesGpuTest, AddConcatMaskOffsetAndIntegerTensorsMatchCpu) {
  {
    const auto x = random(5 * 96), y = random(5 * 96);
    for (bool f32_y : {false, true}) {
      auto [go, co] = outputs({5, 96}, true);
      ASSERT_EQ(gpu_->api->add(gpu_->api->ctx, nullptr, gpu_->tensor({5, 96}, x), gpu_->tensor({5, 96}, y, f32_y), go),
                DRIFT_OK);
      ASSERT_EQ(cpu_->api->add(cpu_->api->ctx, nullptr, cpu_->tensor({5, 96}, x), cpu_->tensor({5, 96}, y), co),
                DRIFT_OK);
      EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-6) << "add, F32 y " << f32_y;
    }
    drift_tensor_t* gx = gpu_->tensor({5, 96}, x);
    ASSERT_EQ(gpu_->api->add(gpu_->api->ctx, nullptr, gx, gpu_->tensor({5, 96}, y), gx), DRIFT_OK) << "in place";
    auto [g2, c2] = outputs({5, 96});
    ASSERT_EQ(cpu_->api->add(cpu_->api->ctx, nullptr, cpu_->tensor({5, 96}, x), cpu_->tensor({5, 96}, y), c2),
              DRIFT_OK);
    std::vector<float> want = cpu_->read(c2);
    for (float& v : want) v = round_bf16(v);
    EXPECT_EQ(gpu_->read(gx), want) << "bf16 in place: the fp32 sum rounded once";
  }
  {
    const auto a = random(3 * 64), b = random(3 * 96);
    for (bool f32 : {false, true}) {
      auto [go, co] = outputs({3, 160}, f32);
      const drift_tensor_t* gparts[] = {gpu_->tensor({3, 64}, a, f32), gpu_->tensor({3, 96}, b, f32)};
      const drift_tensor_t* cparts[] = {cpu_->tensor({3, 64}, a), cpu_->tensor({3, 96}, b)};
      ASSERT_EQ(gpu_->api->concat(gpu_->api->ctx, nullptr, gparts, 2, go), DRIFT_OK);
      ASSERT_EQ(cpu_->api->concat(cpu_->api->ctx, nullptr, cparts, 2, co), DRIFT_OK);
      EXPECT_EQ(gpu_->read(go), cpu_->read(co)) << "concat copies exactly, F32 " << f32;
    }
  }
  {
    const int64_t n_q = 4, n_kv = 300, heads = 8, kv_heads = 2, d = 64, offset = 290;
    const auto q = random(n_q * heads * d), k = random(n_kv * kv_heads * d), v = random(n_kv * kv_heads * d);
    std::vector<uint8_t> tail(n_q * (n_kv - offset));
    for (int64_t i = 0; i < n_q; ++i)
      for (int64_t j = 0; j < n_kv - offset; ++j) tail[i * (n_kv - offset) + j] = (j % (i + 2) == 0) ? 1 : 0;
    auto [go, co] = outputs({n_q, heads, d});
    auto args = [&](Services& s, drift_tensor_t* out) {
      drift_attention_args_t a{};
      a.struct_size = sizeof(a);
      a.q = s.tensor({n_q, heads, d}, q);
      a.k = s.tensor({n_kv, kv_heads, d}, k);
      a.v = s.tensor({n_kv, kv_heads, d}, v);
      a.mask = tail.data();
      a.mask_offset = offset;
      a.out = out;
      return a;
    };
    drift_attention_args_t ga = args(*gpu_, go), ca = args(*cpu_, co);
    ASSERT_EQ(gpu_->api->attention(gpu_->api->ctx, nullptr, &ga), DRIFT_OK);
    ASSERT_EQ(cpu_->api->attention(cpu_->api->ctx, nullptr, &ca), DRIFT_OK);
    EXPECT_LT(rel_error(gpu_->read(go), cpu_->read(co)), 1e-2) << "mask_offset";
  }
  {
    const std::string head = test::test_data_path("models/stories260K-eagle3/model.safetensors");
    ASSERT_FALSE(head.empty());
    const char* names[] = {"d2t", "t2d"};
    drift_tensor_t g[2]{}, c[2]{};
    ASSERT_EQ(gpu_->api->load_safetensors(gpu_->api->ctx, head.c_str(), names, 2, g), DRIFT_OK);
    ASSERT_EQ(cpu_->api->load_safetensors(cpu_->api->ctx, head.c_str(), names, 2, c), DRIFT_OK);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(g[i].device, DRIFT_DEVICE_CUDA);
      EXPECT_EQ(g[i].dtype, DRIFT_DTYPE_I32);
      EXPECT_EQ(gpu_->read(&g[i]), cpu_->read(&c[i])) << names[i];
      gpu_->api->tensor_free(gpu_->api->ctx, &g[i]);
      cpu_->api->tensor_free(cpu_->api->ctx, &c[i]);
    }
  }
}

// ABI 1.3's page_scores on the device against the CPU's (the fp32 reference) by normalised
// error, with q in the backend's activation dtype (bf16, fp16) and in F32, over page counts (one,
// a partial tile, 64K tokens of 16-token pages), head_dims, GQA groups and query rows; both sides
// start from the same rounded values. A rerun gives the same bits (a fixed summation order).
TEST_F(PluginServicesGpuTest, PageScoresMatchCpuForBf16AndFp16Queries) {
  auto host_values = [](const Tensor& t) { return std::vector<float>(t.as<float>(), t.as<float>() + t.numel()); };
  auto random_tensor = [&](std::vector<int64_t> shape) {
    Tensor t = Tensor::zeros(std::move(shape));
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = dist(rng_);
    return t;
  };
  for (DType storage : {DType::BF16, DType::F16}) {
    std::string why;
    std::unique_ptr<Backend> backend = test::cuda_backend_or_null(why, storage);
    ASSERT_TRUE(backend) << why;
    Services gpu(std::move(backend), model_);
    Backend& dev = gpu.backend();
    auto on_device_f32 = [&](const Tensor& host) {
      Tensor t = dev.alloc(host.shape(), DType::F32);
      dev.copy(host, t);
      return t;
    };
    const char* name = storage == DType::F16 ? "fp16" : "bf16";
    const int64_t kv_heads = 4;
    for (int64_t pages : {1, 17, 4096})
      for (int64_t hd : {64, 128}) {
        // Summaries as page_key_summary makes them: kmax >= kmin elementwise.
        const Tensor a = random_tensor({pages, kv_heads, hd}), b = random_tensor({pages, kv_heads, hd});
        Tensor kmax = Tensor::zeros({pages, kv_heads, hd}), kmin = Tensor::zeros({pages, kv_heads, hd});
        for (int64_t i = 0; i < a.numel(); ++i) {
          kmax.as<float>()[i] = std::max(a.as<float>()[i], b.as<float>()[i]);
          kmin.as<float>()[i] = std::min(a.as<float>()[i], b.as<float>()[i]);
        }
        const Tensor kmax_dev = on_device_f32(kmax), kmin_dev = on_device_f32(kmin);
        for (int64_t group : {1, 4, 8})
          for (int64_t n : {1, 7, 33}) {
            const int64_t heads = kv_heads * group;
            const Tensor q_host = random_tensor({n, heads, hd});
            const bool f32_q = pages == 17 && n == 7;  // F32 q is accepted too
            const Tensor q_dev = f32_q ? on_device_f32(q_host) : dev.upload(q_host);
            Tensor q_ref = Tensor::zeros({n, heads, hd});
            const std::vector<float> rounded = host_values(dev.to_host_f32(q_dev));
            std::copy(rounded.begin(), rounded.end(), q_ref.as<float>());

            const Tensor out_dev = dev.alloc({kv_heads, pages}, DType::F32);
            Tensor out_ref = Tensor::zeros({kv_heads, pages});
            const drift_tensor_t gq = describe_tensor(q_dev), ghi = describe_tensor(kmax_dev),
                                 glo = describe_tensor(kmin_dev);
            drift_tensor_t gout = describe_tensor(out_dev);
            const drift_tensor_t cq = describe_tensor(q_ref), chi = describe_tensor(kmax), clo = describe_tensor(kmin);
            drift_tensor_t cout = describe_tensor(out_ref);
            const std::string what = fmt::format("{} q{} pages {} head_dim {} group {} n {}", name,
                                                 f32_q ? " (F32)" : "", pages, hd, group, n);
            ASSERT_EQ(gpu.api->page_scores(gpu.api->ctx, nullptr, &gq, &ghi, &glo, &gout), DRIFT_OK) << what;
            ASSERT_EQ(cpu_->api->page_scores(cpu_->api->ctx, nullptr, &cq, &chi, &clo, &cout), DRIFT_OK) << what;
            const std::vector<float> got = host_values(dev.to_host_f32(out_dev));
            EXPECT_LT(rel_error(got, host_values(out_ref)), 1e-5) << what;
            if (pages == 4096 && n == 33) {
              ASSERT_EQ(gpu.api->page_scores(gpu.api->ctx, nullptr, &gq, &ghi, &glo, &gout), DRIFT_OK) << what;
              EXPECT_EQ(host_values(dev.to_host_f32(out_dev)), got) << what << ": a rerun gives other bits";
            }
          }
      }
    // The other 16-bit dtype, or q in host memory, is refused before any work.
    const Tensor q_host = random_tensor({2, 8, 64});
    const Tensor kmax_dev = on_device_f32(random_tensor({3, 2, 64}));
    const Tensor out_dev = dev.alloc({2, 3}, DType::F32);
    const Tensor q_dev = dev.upload(q_host);
    drift_tensor_t q = describe_tensor(q_dev), hi = describe_tensor(kmax_dev), out = describe_tensor(out_dev);
    q.dtype = storage == DType::F16 ? DRIFT_DTYPE_BF16 : DRIFT_DTYPE_F16;
    EXPECT_EQ(gpu.api->page_scores(gpu.api->ctx, nullptr, &q, &hi, &hi, &out), DRIFT_ERROR_INVALID_ARGUMENT) << name;
    const drift_tensor_t q_cpu = describe_tensor(q_host);
    EXPECT_EQ(gpu.api->page_scores(gpu.api->ctx, nullptr, &q_cpu, &hi, &hi, &out), DRIFT_ERROR_INVALID_ARGUMENT)
        << name;
  }
}

// The device's picks equal the host sampler's over the same fp32 logits, for every filter and
// for ties (the order is by value, then lowest id).
TEST_F(PluginServicesGpuTest, DevicePicksEqualTheHostSamplersPicks) {
  Backend& gpu = gpu_->backend();
  for (int64_t vocab : {50, 5000, 128256}) {
    const int64_t rows = 48;
    Tensor logits = Tensor::zeros({rows, vocab});
    std::normal_distribution<float> dist(0.0f, 2.5f);
    for (int64_t i = 0; i < logits.numel(); ++i)
      logits.as<float>()[i] = (i / vocab) % 3 == 0 ? std::round(dist(rng_) * 2) / 2 : dist(rng_);  // ties in some rows
    std::vector<RowSampling> settings(rows);
    for (int64_t r = 0; r < rows; ++r) {
      SamplingParams& p = settings[r].params;
      p.temperature = r % 8 == 0 ? 0.0 : 0.4 + 0.15 * static_cast<double>(r % 7);
      p.top_k = (r % 4 == 1) ? 40 : (r % 4 == 2 ? 1 : 0);
      p.top_p = (r % 5 == 3) ? 0.9 : (r % 5 == 4 ? 0.5 : 1.0);
      p.min_p = (r % 6 == 5) ? 0.05 : 0.0;
      settings[r].seed = 1000 + r;
      settings[r].output_index = static_cast<uint64_t>(r * 7);
    }
    Tensor on_device = gpu.alloc({rows, vocab}, DType::F32);
    gpu.copy(logits, on_device);
    const std::vector<int32_t> picks = gpu.pick_tokens(on_device, settings);
    ASSERT_EQ(picks.size(), static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t expected = sample_token(logits.as<float>() + r * vocab, vocab, settings[r].params, settings[r].seed,
                                            settings[r].output_index);
      EXPECT_EQ(picks[r], expected) << "vocab " << vocab << " row " << r << " temperature "
                                    << settings[r].params.temperature;
    }
  }
}

// Shaped rows (logit_bias, penalties, min_tokens' -inf): the device shapes its logits in place
// with the host's arithmetic, so its picks equal the host's shaped picks, and a shaped logit has
// the host's bits.
TEST_F(PluginServicesGpuTest, ShapedDevicePicksEqualTheHostsShapedPicks) {
  const int64_t rows = 24, vocab = 5000;
  const Tensor logits = random_logits(rows, vocab);
  std::vector<RowSampling> settings(rows);
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  for (int64_t r = 0; r < rows; ++r) {
    SamplingParams& p = settings[r].params;
    p.temperature = r % 3 == 0 ? 0.0 : 0.9;
    p.repetition_penalty = 1.0 + 0.1 * static_cast<double>(r % 5);
    p.frequency_penalty = 0.3 * static_cast<double>(r % 4);
    p.presence_penalty = r % 2 == 0 ? 0.5 : -0.5;
    p.logit_bias = {{token(rng_), 8.0}, {token(rng_), -100.0}};
    std::sort(p.logit_bias.begin(), p.logit_bias.end());
    p.min_tokens = r % 2 == 0 ? 4 : 0;
    std::vector<int32_t> prompt(40), output(30);
    for (auto* v : {&prompt, &output})
      for (int32_t& t : *v) t = token(rng_) % 200;  // a small set: repeats
    settings[r].seed = 50 + r;
    settings[r].output_index = static_cast<uint64_t>(r % 8);
    settings[r].adjustments =
        logit_adjustments(p, TokenOccurrences(prompt, output), {}, r % 8, std::vector<int32_t>{2});
    ASSERT_FALSE(settings[r].adjustments.empty());
  }
  expect_device_shapes_and_picks_as_the_host(logits, settings);
}

// Structured output's masks (some rows masked, some not, some with adjustments too; a vocabulary
// that is not a multiple of 32): the device's picks equal the host's, the masked logits are
// -infinity exactly where the mask says, and an allowed logit keeps its bits.
TEST_F(PluginServicesGpuTest, MaskedDevicePicksEqualTheHostsMaskedPicks) {
  const int64_t rows = 20, vocab = 4999;
  const Tensor logits = random_logits(rows, vocab);
  std::vector<RowSampling> settings(rows);
  std::bernoulli_distribution keep(0.05);
  std::uniform_int_distribution<int32_t> token(0, vocab - 1);
  for (int64_t r = 0; r < rows; ++r) {
    settings[r].params.temperature = r % 2 == 0 ? 0.0 : 1.0;
    settings[r].params.top_k = r % 4 == 1 ? 20 : 0;
    settings[r].seed = 300 + r;
    settings[r].output_index = static_cast<uint64_t>(r);
    if (r % 5 == 4) continue;  // unmasked
    auto mask = std::make_shared<grammar::TokenMask>();
    mask->words.assign((vocab + 31) / 32, 0u);
    for (int32_t t = 0; t < vocab; ++t)
      if (keep(rng_)) mask->allow(t);
    mask->allow(static_cast<int32_t>(r));  // never empty
    settings[r].allowed = mask;
    if (r % 3 == 0) settings[r].adjustments = {{token(rng_), 3.0f, 1.0f, 1.0f, 0.0f}};
  }
  expect_device_shapes_and_picks_as_the_host(logits, settings);
}

}  // namespace
}  // namespace drift
