// The compute primitives and tensor services of install_compute_callbacks, called as a plugin
// calls them (through the drift_host_api_t table of a PluginContext) and checked against naive
// double-precision references written here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/cpu_backend.h"
#include "core/model/rope_frequencies.h"
#include "core/plugin/backend_callbacks.h"
#include "core/plugin/host_services.h"
#include "core/safetensors.h"
#include "support/test_data.h"

namespace drift {
namespace {

// A host buffer plus the drift_tensor_t describing it (contiguous strides).
template <typename V>
struct Buf {
  std::vector<V> data;
  drift_tensor_t t{};
  Buf(std::vector<int64_t> shape, std::vector<V> values = {}) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    data = values.empty() ? std::vector<V>(n) : std::move(values);
    EXPECT_EQ(static_cast<int64_t>(data.size()), n);
    t.data = data.data();
    t.dtype = std::is_same_v<V, float> ? DRIFT_DTYPE_F32 : DRIFT_DTYPE_I32;
    t.device = DRIFT_DEVICE_CPU;
    t.ndim = static_cast<int32_t>(shape.size());
    int64_t stride = 1;
    for (int32_t d = t.ndim - 1; d >= 0; --d) {
      t.shape[d] = shape[d];
      t.strides[d] = stride;
      stride *= shape[d];
    }
  }
  V& operator[](size_t i) { return data[i]; }
  drift_tensor_t* operator&() { return &t; }
};
using F = Buf<float>;
using I = Buf<int32_t>;

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

ModelConfig tiny_model() {
  ModelConfig m;
  m.vocab_size = 10;
  m.hidden_size = 32;
  m.intermediate_size = 48;
  m.num_layers = 2;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 8;
  m.rope.type = RopeType::Llama3;  // non-trivial inv_freq
  m.rope.theta = 500000.0;
  m.rope.factor = 8.0;
  m.rope.original_max_position = 64;
  return m;
}

// One paged KV pool: 6 pages of 4 slots, 2 layers, 2 kv heads of head_dim 8. Sequence 7 owns
// pages {5, 2, 0} and holds 10 tokens (the last page half full).
struct PagedKv {
  static constexpr int64_t kBlock = 4, kPages = 6, kKvHeads = 2, kHeadDim = 8;
  std::vector<LayerKV> layers;
  std::vector<drift_page_id_t> table{5, 2, 0};
  int64_t num_tokens = 10;
  PagedKv() {
    for (uint32_t l = 0; l < 2; ++l) {
      LayerKV kv{Tensor::zeros({kPages * kBlock, kKvHeads, kHeadDim}), Tensor::zeros({kPages * kBlock, kKvHeads, kHeadDim})};
      auto k = random_floats(kv.k.numel(), 100 + l), v = random_floats(kv.v.numel(), 200 + l);
      std::copy(k.begin(), k.end(), kv.k.as<float>());
      std::copy(v.begin(), v.end(), kv.v.as<float>());
      layers.push_back(std::move(kv));
    }
  }
  // K (or V) row of sequence position `pos` at `layer`: [kv_heads * head_dim] floats.
  const float* row(bool value, int layer, int64_t pos) const {
    const Tensor& t = value ? layers[layer].v : layers[layer].k;
    const int64_t slot = table[pos / kBlock] * kBlock + pos % kBlock;
    return t.as<float>() + slot * kKvHeads * kHeadDim;
  }
  EngineKvAccess access() {
    EngineKvAccess a;
    a.kv_layers = [this] { return &layers; };
    a.block_size = kBlock;
    a.block_table = [this](drift_seq_id_t seq, const drift_page_id_t** pages, int64_t* n, int64_t* tokens) {
      if (seq != 7) return DRIFT_ERROR_NOT_FOUND;
      *pages = table.data();
      *n = static_cast<int64_t>(table.size());
      *tokens = num_tokens;
      return DRIFT_OK;
    };
    return a;
  }
};

struct Fixture {
  HostState state;
  CpuBackend backend;
  ModelConfig model = tiny_model();
  RopeFrequencies rope = compute_rope_frequencies(model.rope, model.head_dim);
  PagedKv kv;
  PluginContext context{"cb", "", &state};
  const drift_host_api_t* api = context.api();
  void* ctx = api->ctx;
  Fixture() { install_compute_callbacks(state.callbacks, backend, model, rope, kv.access()); }
};

// ---- references (doubles, plain loops) -----------------------------------------------------

// Attention of one query row over explicit K/V rows (each [kv_heads * head_dim]); visible[j]
// says whether row j may be attended. Returns [heads * head_dim].
std::vector<double> ref_attention(const float* q, const std::vector<const float*>& k,
                                  const std::vector<const float*>& v, const std::vector<bool>& visible,
                                  int64_t heads, int64_t kv_heads, int64_t head_dim, double scale) {
  std::vector<double> out(heads * head_dim, 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / (heads / kv_heads);
    std::vector<double> s(k.size(), 0.0);
    double mx = -1e300;
    for (size_t j = 0; j < k.size(); ++j) {
      if (!visible[j]) continue;
      double dot = 0;
      for (int64_t d = 0; d < head_dim; ++d) dot += double(q[h * head_dim + d]) * k[j][g * head_dim + d];
      s[j] = dot * scale;
      mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (size_t j = 0; j < k.size(); ++j)
      if (visible[j]) sum += std::exp(s[j] - mx);
    for (size_t j = 0; j < k.size(); ++j) {
      if (!visible[j]) continue;
      const double p = std::exp(s[j] - mx) / sum;
      for (int64_t d = 0; d < head_dim; ++d) out[h * head_dim + d] += p * v[j][g * head_dim + d];
    }
  }
  return out;
}

void expect_near_all(const float* got, const std::vector<double>& want, double tol, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

// ---- primitives -----------------------------------------------------------------------------

TEST(BackendCallbacks, GemmWithAndWithoutBias) {
  Fixture f;
  const int64_t m = 3, k = 37, n = 5;
  F x({m, k}, random_floats(m * k, 1)), w({n, k}, random_floats(n * k, 2)), bias({n}, random_floats(n, 3));
  for (bool with_bias : {false, true}) {
    F out({m, n});
    ASSERT_EQ(f.api->gemm(f.ctx, nullptr, &x, &w, with_bias ? &bias : nullptr, &out), DRIFT_OK);
    std::vector<double> want(m * n);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t o = 0; o < n; ++o) {
        double acc = with_bias ? bias[o] : 0.0;
        for (int64_t i = 0; i < k; ++i) acc += double(x[r * k + i]) * w[o * k + i];
        want[r * n + o] = acc;
      }
    expect_near_all(out.data.data(), want, 1e-5, with_bias ? "gemm+bias" : "gemm");
  }
}

TEST(BackendCallbacks, RmsNormOutOfPlaceAndInPlace) {
  Fixture f;
  const int64_t rows = 3, dim = 16;
  const float eps = 1e-5f;
  F x({rows, dim}, random_floats(rows * dim, 4, -3, 3)), weight({dim}, random_floats(dim, 5, 0.5, 1.5));
  std::vector<double> want(rows * dim);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) want[r * dim + i] = x[r * dim + i] * inv * weight[i];
  }
  F out({rows, dim});
  ASSERT_EQ(f.api->rms_norm(f.ctx, nullptr, &x, &weight, eps, &out), DRIFT_OK);
  expect_near_all(out.data.data(), want, 1e-5, "rms_norm");
  ASSERT_EQ(f.api->rms_norm(f.ctx, nullptr, &x, &weight, eps, &x), DRIFT_OK);  // in place
  expect_near_all(x.data.data(), want, 1e-5, "rms_norm in place");
}

// transformers' _compute_llama3_parameters, in doubles: the frequencies the model's rope
// settings stand for, written out independently of core/model/rope_frequencies.cpp.
std::vector<double> llama3_inv_freq(const RopeConfig& rope, int64_t head_dim) {
  const double pi = std::acos(-1.0);
  const double low_wavelen = rope.original_max_position / rope.low_freq_factor;
  const double high_wavelen = rope.original_max_position / rope.high_freq_factor;
  std::vector<double> inv;
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double base = 1.0 / std::pow(rope.theta, double(i) / double(head_dim));
    const double wavelen = 2.0 * pi / base;
    double scaled = wavelen > low_wavelen ? base / rope.factor : base;
    if (wavelen >= high_wavelen && wavelen <= low_wavelen) {
      const double smooth = (rope.original_max_position / wavelen - rope.low_freq_factor) /
                            (rope.high_freq_factor - rope.low_freq_factor);
      scaled = (1.0 - smooth) * scaled / rope.factor + smooth * scaled;
    }
    inv.push_back(scaled);
  }
  return inv;
}

TEST(BackendCallbacks, RopeMatchesRotateHalfWithTheModelsFrequencies) {
  Fixture f;
  const int64_t n = 3, heads = 2, hd = f.model.head_dim, half = hd / 2;
  F x({n, heads, hd}, random_floats(n * heads * hd, 6));
  I pos({n}, {0, 5, 300});
  const std::vector<float> orig = x.data;
  ASSERT_EQ(f.api->rope(f.ctx, nullptr, &x, &pos), DRIFT_OK);
  const std::vector<double> inv = llama3_inv_freq(f.model.rope, hd);
  std::vector<double> want(orig.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < half; ++i) {
        const double angle = double(pos[t]) * inv[i];
        const double a = orig[(t * heads + h) * hd + i], b = orig[(t * heads + h) * hd + i + half];
        want[(t * heads + h) * hd + i] = a * std::cos(angle) - b * std::sin(angle);        // x*cos + rotate_half(x)*sin
        want[(t * heads + h) * hd + i + half] = b * std::cos(angle) + a * std::sin(angle);
      }
  expect_near_all(x.data.data(), want, 1e-4, "rope");
}

TEST(BackendCallbacks, SoftmaxWithTemperature) {
  Fixture f;
  const int64_t rows = 2, cols = 11;
  const float temperature = 0.7f;
  F x({rows, cols}, random_floats(rows * cols, 7, -4, 4)), out({rows, cols});
  std::vector<double> want(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double(x[r * cols + c]) / temperature);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(x[r * cols + c]) / temperature - mx);
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = std::exp(double(x[r * cols + c]) / temperature - mx) / sum;
  }
  ASSERT_EQ(f.api->softmax(f.ctx, nullptr, &x, temperature, &out), DRIFT_OK);
  expect_near_all(out.data.data(), want, 1e-6, "softmax");
  ASSERT_EQ(f.api->softmax(f.ctx, nullptr, &x, temperature, &x), DRIFT_OK);  // in place
  expect_near_all(x.data.data(), want, 1e-6, "softmax in place");
}

TEST(BackendCallbacks, TopKDescendingTiesByLowestIndex) {
  Fixture f;
  const int64_t v = 9;
  const int32_t k = 5;
  std::vector<float> values = {1, 3, 3, 2, 3, -1, 2, 0, 3};
  auto random = random_floats(v, 8);
  values.insert(values.end(), random.begin(), random.end());
  F x({2, v}, values), top({2, k});
  I idx({2, k});
  ASSERT_EQ(f.api->top_k(f.ctx, nullptr, &x, k, &top, &idx), DRIFT_OK);
  EXPECT_EQ(std::vector<int32_t>(idx.data.begin(), idx.data.begin() + k), (std::vector<int32_t>{1, 2, 4, 8, 3}));
  EXPECT_EQ(std::vector<float>(top.data.begin(), top.data.begin() + k), (std::vector<float>{3, 3, 3, 3, 2}));
  // Row 1 against a stable sort by descending value.
  std::vector<int32_t> order(v);
  for (int32_t i = 0; i < v; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return random[a] > random[b]; });
  for (int32_t j = 0; j < k; ++j) {
    EXPECT_EQ(idx[k + j], order[j]);
    EXPECT_EQ(top[k + j], random[order[j]]);
  }
}

TEST(BackendCallbacks, SiluMulSeparateGateAndUp) {
  Fixture f;
  const int64_t n = 3, inter = 7;
  F gate({n, inter}, random_floats(n * inter, 9, -5, 5)), up({n, inter}, random_floats(n * inter, 10)), out({n, inter});
  std::vector<double> want(n * inter);
  for (int64_t i = 0; i < n * inter; ++i) want[i] = double(gate[i]) / (1.0 + std::exp(-double(gate[i]))) * up[i];
  ASSERT_EQ(f.api->silu_mul(f.ctx, nullptr, &gate, &up, &out), DRIFT_OK);
  expect_near_all(out.data.data(), want, 1e-6, "silu_mul");
  ASSERT_EQ(f.api->silu_mul(f.ctx, nullptr, &gate, &up, &gate), DRIFT_OK);  // in place
  expect_near_all(gate.data.data(), want, 1e-6, "silu_mul in place");
}

TEST(BackendCallbacks, EmbeddingGathersRows) {
  Fixture f;
  F table({10, 4}, random_floats(40, 11)), out({3, 4});
  I ids({3}, {3, 0, 9});
  ASSERT_EQ(f.api->embedding(f.ctx, nullptr, &table, &ids, &out), DRIFT_OK);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t d = 0; d < 4; ++d) EXPECT_EQ(out[i * 4 + d], table[ids[i] * 4 + d]);
  I bad({3}, {3, 10, 0});
  EXPECT_EQ(f.api->embedding(f.ctx, nullptr, &table, &bad, &out), DRIFT_ERROR_INVALID_ARGUMENT);
}

// ---- attention ----------------------------------------------------------------------------

struct DenseAttention {
  static constexpr int64_t n_q = 3, n_kv = 6, heads = 4, kv_heads = 2, hd = 8;
  F q{{n_q, heads, hd}, random_floats(n_q * heads * hd, 12)};
  F k{{n_kv, kv_heads, hd}, random_floats(n_kv * kv_heads * hd, 13)};
  F v{{n_kv, kv_heads, hd}, random_floats(n_kv * kv_heads * hd, 14)};
  F out{{n_q, heads, hd}};
  std::vector<const float*> rows(F& t) {
    std::vector<const float*> r;
    for (int64_t j = 0; j < n_kv; ++j) r.push_back(t.data.data() + j * kv_heads * hd);
    return r;
  }
  drift_attention_args_t args() {
    drift_attention_args_t a{};
    a.struct_size = sizeof(a);
    a.q = &q.t;
    a.k = &k.t;
    a.v = &v.t;
    a.out = &out.t;
    return a;
  }
};

TEST(BackendCallbacks, AttentionDenseCausalByPosition) {
  Fixture f;
  DenseAttention d;
  I pos({d.n_q}, {3, 4, 5});
  auto a = d.args();
  a.q_positions = &pos.t;
  ASSERT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_OK);
  for (int64_t i = 0; i < d.n_q; ++i) {
    std::vector<bool> visible(d.n_kv);
    for (int64_t j = 0; j < d.n_kv; ++j) visible[j] = j <= pos[i];
    auto want = ref_attention(d.q.data.data() + i * d.heads * d.hd, d.rows(d.k), d.rows(d.v), visible, d.heads,
                              d.kv_heads, d.hd, 1.0 / std::sqrt(double(d.hd)));
    expect_near_all(d.out.data.data() + i * d.heads * d.hd, want, 1e-5, "causal row " + std::to_string(i));
  }
}

TEST(BackendCallbacks, AttentionDenseTreeMask) {
  Fixture f;
  DenseAttention d;
  // Rows: a prefix of 3 positions, then a tree 3 <- {4, 5} siblings; query i is node 3 + i.
  const uint8_t mask[DenseAttention::n_q * DenseAttention::n_kv] = {
      1, 1, 1, 1, 0, 0,  //
      1, 1, 1, 1, 1, 0,  //
      1, 1, 1, 1, 0, 1};
  auto a = d.args();
  a.mask = mask;
  a.scale = 0.3f;
  ASSERT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_OK);  // q_positions may be NULL with a mask
  for (int64_t i = 0; i < d.n_q; ++i) {
    std::vector<bool> visible(d.n_kv);
    for (int64_t j = 0; j < d.n_kv; ++j) visible[j] = mask[i * d.n_kv + j] != 0;
    auto want = ref_attention(d.q.data.data() + i * d.heads * d.hd, d.rows(d.k), d.rows(d.v), visible, d.heads,
                              d.kv_heads, d.hd, 0.3);
    expect_near_all(d.out.data.data() + i * d.heads * d.hd, want, 1e-5, "tree row " + std::to_string(i));
  }
}

// ABI 1.2 mask_offset: the first positions visible to every query, the mask over the rest only --
// the same result as the full mask with those columns set.
TEST(BackendCallbacks, AttentionMaskOffsetMakesThePrefixVisible) {
  Fixture f;
  DenseAttention d;
  const uint8_t tail[DenseAttention::n_q * 3] = {1, 0, 0,  //
                                                 1, 1, 0,  //
                                                 1, 0, 1};
  auto a = d.args();
  a.mask = tail;
  a.mask_offset = 3;
  ASSERT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_OK);
  for (int64_t i = 0; i < d.n_q; ++i) {
    std::vector<bool> visible(d.n_kv, true);
    for (int64_t j = 3; j < d.n_kv; ++j) visible[j] = tail[i * 3 + (j - 3)] != 0;
    auto want = ref_attention(d.q.data.data() + i * d.heads * d.hd, d.rows(d.k), d.rows(d.v), visible, d.heads,
                              d.kv_heads, d.hd, 1.0 / std::sqrt(double(d.hd)));
    expect_near_all(d.out.data.data() + i * d.heads * d.hd, want, 1e-5, "row " + std::to_string(i));
  }
  a.mask_offset = d.n_kv + 1;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_ERROR_INVALID_ARGUMENT) << "beyond the attended positions";
  a.mask_offset = -1;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_ERROR_INVALID_ARGUMENT);
}

// ABI 1.4: a plugin's own K/V in pages -- DenseAttention's 6 rows spread over pages of 2 slots of a
// pool of 5 pages (row j at page pages[j / 2], slot j % 2) -- attend exactly as the same rows
// contiguous, causal and under a tree mask with an offset; page lists that cannot hold kv_len, or
// name pages outside the pool, are refused.
TEST(BackendCallbacks, AttentionOverAPluginsOwnPagedKv) {
  Fixture f;
  DenseAttention d;
  constexpr int64_t kPage = 2, kPoolPages = 5, kRow = DenseAttention::kv_heads * DenseAttention::hd;
  const int32_t pages[] = {4, 0, 2};
  F k_pool{{kPoolPages * kPage, DenseAttention::kv_heads, DenseAttention::hd}};
  F v_pool{{kPoolPages * kPage, DenseAttention::kv_heads, DenseAttention::hd}};
  for (int64_t j = 0; j < DenseAttention::n_kv; ++j) {
    const int64_t slot = pages[j / kPage] * kPage + j % kPage;
    std::copy_n(d.k.data.data() + j * kRow, kRow, k_pool.data.data() + slot * kRow);
    std::copy_n(d.v.data.data() + j * kRow, kRow, v_pool.data.data() + slot * kRow);
  }
  I pos({d.n_q}, {3, 4, 5});
  const uint8_t tail[DenseAttention::n_q * 3] = {1, 0, 0, 1, 1, 0, 1, 0, 1};
  for (bool masked : {false, true}) {
    auto dense = d.args();
    F expected{{d.n_q, d.heads, d.hd}};
    dense.out = &expected.t;
    auto paged = d.args();
    paged.k = &k_pool.t;
    paged.v = &v_pool.t;
    paged.kv_pages = pages;
    paged.num_kv_pages = 3;
    paged.kv_block_size = kPage;
    paged.kv_len = DenseAttention::n_kv;
    for (auto* a : {&dense, &paged}) {
      if (masked) {
        a->mask = tail;
        a->mask_offset = 3;
      } else {
        a->q_positions = &pos.t;
      }
    }
    ASSERT_EQ(f.api->attention(f.ctx, nullptr, &dense), DRIFT_OK);
    ASSERT_EQ(f.api->attention(f.ctx, nullptr, &paged), DRIFT_OK);
    for (size_t i = 0; i < expected.data.size(); ++i)
      ASSERT_FLOAT_EQ(d.out.data[i], expected.data[i]) << (masked ? "masked" : "causal") << " at " << i;
  }
  auto bad = d.args();
  bad.k = &k_pool.t;
  bad.v = &v_pool.t;
  bad.q_positions = &pos.t;
  bad.kv_pages = pages;
  bad.kv_block_size = kPage;
  bad.kv_len = DenseAttention::n_kv;
  bad.num_kv_pages = 2;  // 4 positions' room for 6
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &bad), DRIFT_ERROR_INVALID_ARGUMENT);
  const int32_t outside[] = {4, 5, 0};
  bad.num_kv_pages = 3;
  bad.kv_pages = outside;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &bad), DRIFT_ERROR_INVALID_ARGUMENT);
  bad.kv_pages = pages;
  bad.kv_block_size = 3;  // 10 slots are not whole pages of 3
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &bad), DRIFT_ERROR_INVALID_ARGUMENT);
  bad.kv_block_size = 0;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &bad), DRIFT_ERROR_INVALID_ARGUMENT);
}

// ABI 1.2 add and concat.
TEST(BackendCallbacks, AddOutOfPlaceAndInPlace) {
  Fixture f;
  F x({2, 3}, random_floats(6, 21)), y({2, 3}, random_floats(6, 22)), out({2, 3});
  ASSERT_EQ(f.api->add(f.ctx, nullptr, &x, &y, &out), DRIFT_OK);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(out[i], x[i] + y[i]);
  const std::vector<float> before = y.data;
  ASSERT_EQ(f.api->add(f.ctx, nullptr, &x, &y, &y), DRIFT_OK) << "out may be y";
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], x[i] + before[i]);
  ASSERT_EQ(f.api->add(f.ctx, nullptr, &x, &x, &x), DRIFT_OK) << "out may be x (and y)";
  F wrong({3, 2});
  EXPECT_EQ(f.api->add(f.ctx, nullptr, &x, &wrong, &out), DRIFT_ERROR_INVALID_ARGUMENT);
}

TEST(BackendCallbacks, ConcatPlacesPartsSideBySide) {
  Fixture f;
  F a({2, 2, 2}, random_floats(8, 23)), b({2, 2, 3}, random_floats(12, 24)), out({2, 2, 5});
  const drift_tensor_t* parts[] = {&a.t, &b.t};
  ASSERT_EQ(f.api->concat(f.ctx, nullptr, parts, 2, &out), DRIFT_OK);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 5; ++c)
      EXPECT_EQ(out[r * 5 + c], c < 2 ? a[r * 2 + c] : b[r * 3 + (c - 2)]) << r << "," << c;
  F narrow({2, 2, 4}), other_rows({3, 2, 3});
  EXPECT_EQ(f.api->concat(f.ctx, nullptr, parts, 2, &narrow), DRIFT_ERROR_INVALID_ARGUMENT) << "widths differ";
  const drift_tensor_t* mismatched[] = {&a.t, &other_rows.t};
  EXPECT_EQ(f.api->concat(f.ctx, nullptr, mismatched, 2, &out), DRIFT_ERROR_INVALID_ARGUMENT) << "leading dims differ";
  const drift_tensor_t* aliased[] = {&out.t, &b.t};
  EXPECT_EQ(f.api->concat(f.ctx, nullptr, aliased, 2, &out), DRIFT_ERROR_INVALID_ARGUMENT) << "out overlaps a part";
  EXPECT_EQ(f.api->concat(f.ctx, nullptr, parts, 0, &out), DRIFT_ERROR_INVALID_ARGUMENT);
}

// Paged: the engine's KV of sequence 7 (positions 0..9 in pages 5, 2, 0), whole or restricted.
void check_paged(Fixture& f, int layer, const std::vector<int32_t>& positions, const std::vector<int64_t>& attended,
                 const drift_page_id_t* pages, int32_t num_pages, const uint8_t* mask) {
  const int64_t n_q = static_cast<int64_t>(positions.size()), heads = 4, hd = PagedKv::kHeadDim;
  F q({n_q, heads, hd}, random_floats(n_q * heads * hd, 15)), out({n_q, heads, hd});
  I pos({n_q}, positions);
  drift_attention_args_t a{};
  a.struct_size = sizeof(a);
  a.q = &q.t;
  a.q_positions = &pos.t;
  a.mask = mask;
  a.seq_id = 7;
  a.layer = layer;
  a.pages = pages;
  a.num_pages = num_pages;
  a.out = &out.t;
  ASSERT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_OK);
  std::vector<const float*> k, v;
  for (int64_t p : attended) {
    k.push_back(f.kv.row(false, layer, p));
    v.push_back(f.kv.row(true, layer, p));
  }
  for (int64_t i = 0; i < n_q; ++i) {
    std::vector<bool> visible(attended.size());
    for (size_t j = 0; j < attended.size(); ++j)
      visible[j] = mask ? mask[i * attended.size() + j] != 0 : attended[j] <= positions[i];
    auto want = ref_attention(q.data.data() + i * heads * hd, k, v, visible, heads, PagedKv::kKvHeads, hd,
                              1.0 / std::sqrt(double(hd)));
    expect_near_all(out.data.data() + i * heads * hd, want, 1e-5, "paged row " + std::to_string(i));
  }
}

TEST(BackendCallbacks, AttentionPagedWholeSequence) {
  Fixture f;
  std::vector<int64_t> all{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  check_paged(f, 1, {9, 6, 12}, all, nullptr, 0, nullptr);  // a query past the KV sees all of it
}

TEST(BackendCallbacks, AttentionPagedExplicitPageList) {
  Fixture f;
  const drift_page_id_t pages[] = {0, 5};  // blocks 2 (positions 8, 9) and 0 (0..3), any order
  std::vector<int64_t> attended{0, 1, 2, 3, 8, 9};
  check_paged(f, 0, {9, 8, 2}, attended, pages, 2, nullptr);
  const uint8_t mask[2 * 6] = {1, 0, 1, 0, 1, 1,  //
                               0, 1, 1, 1, 0, 1};
  check_paged(f, 1, {9, 9}, attended, pages, 2, mask);
}

TEST(BackendCallbacks, AttentionPagedErrors) {
  Fixture f;
  F q({1, 4, 8}), out({1, 4, 8});
  I pos({1}, {3});
  drift_attention_args_t a{};
  a.struct_size = sizeof(a);
  a.q = &q.t;
  a.q_positions = &pos.t;
  a.out = &out.t;
  a.seq_id = 8;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_ERROR_NOT_FOUND);  // unknown sequence
  a.seq_id = 7;
  a.layer = 2;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_ERROR_INVALID_ARGUMENT);  // no such layer
  a.layer = 0;
  const drift_page_id_t foreign[] = {1};
  a.pages = foreign;
  a.num_pages = 1;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_ERROR_INVALID_ARGUMENT);  // not in its table
  const drift_page_id_t twice[] = {2, 2};
  a.pages = twice;
  a.num_pages = 2;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_ERROR_INVALID_ARGUMENT);
  a.num_pages = 0;
  a.pages = nullptr;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), DRIFT_OK);

  // Without the engine's KV the paged variant is not supported (the dense one still is).
  HostState state;
  CpuBackend backend;
  PluginContext context("nokv", "", &state);
  install_compute_callbacks(state.callbacks, backend, f.model, f.rope);
  EXPECT_EQ(context.api()->attention(context.api()->ctx, nullptr, &a), DRIFT_ERROR_NOT_SUPPORTED);
  DenseAttention d;
  I dpos({d.n_q}, {0, 1, 2});
  auto dense = d.args();
  dense.q_positions = &dpos.t;
  EXPECT_EQ(context.api()->attention(context.api()->ctx, nullptr, &dense), DRIFT_OK);
}

// ---- page scores (1.3) ----------------------------------------------------------------------

// SpecPV's / Quest's block score by brute force in doubles: out[h][p] = the mean over rows r and
// the query heads of kv head h's group of max(q[r][head] . kmax[p][h], q[r][head] . kmin[p][h]).
std::vector<double> ref_page_scores(const F& q, const F& kmax, const F& kmin) {
  const int64_t n = q.t.shape[0], heads = q.t.shape[1], hd = q.t.shape[2];
  const int64_t pages = kmax.t.shape[0], kv_heads = kmax.t.shape[1], group = heads / kv_heads;
  std::vector<double> out(kv_heads * pages, 0.0);
  for (int64_t h = 0; h < kv_heads; ++h)
    for (int64_t p = 0; p < pages; ++p) {
      double sum = 0;
      for (int64_t r = 0; r < n; ++r)
        for (int64_t g = 0; g < group; ++g) {
          const float* qh = q.data.data() + (r * heads + h * group + g) * hd;
          const float* hi = kmax.data.data() + (p * kv_heads + h) * hd;
          const float* lo = kmin.data.data() + (p * kv_heads + h) * hd;
          double dot_hi = 0, dot_lo = 0;
          for (int64_t d = 0; d < hd; ++d) {
            dot_hi += double(qh[d]) * hi[d];
            dot_lo += double(qh[d]) * lo[d];
          }
          sum += std::max(dot_hi, dot_lo);
        }
      out[h * pages + p] = sum / double(n * group);
    }
  return out;
}

TEST(BackendCallbacks, PageScoresHandWorked) {
  Fixture f;
  // One head, one page: q = (1, -1), kmax = (2, 0), kmin = (0, -3): dots 2 and 3, the score 3.
  F q({1, 1, 2}, {1, -1}), kmax({1, 1, 2}, {2, 0}), kmin({1, 1, 2}, {0, -3}), out({1, 1});
  ASSERT_EQ(f.api->page_scores(f.ctx, nullptr, &q, &kmax, &kmin, &out), DRIFT_OK);
  EXPECT_EQ(out[0], 3.0f);
  // Two rows: (1, -1) scores 3 as above, (0, 1) scores max(0, -3) = 0; the mean is 1.5.
  F q2({2, 1, 2}, {1, -1, 0, 1});
  ASSERT_EQ(f.api->page_scores(f.ctx, nullptr, &q2, &kmax, &kmin, &out), DRIFT_OK);
  EXPECT_EQ(out[0], 1.5f);
  // GQA 2: kv head 0 serves query heads 0 and 1, kv head 1 query heads 2 and 3.
  F q4({1, 4, 1}, {1, 3, -2, 4}), hi({1, 2, 1}, {2, 1}), lo({1, 2, 1}, {-1, -5}), out2({2, 1});
  ASSERT_EQ(f.api->page_scores(f.ctx, nullptr, &q4, &hi, &lo, &out2), DRIFT_OK);
  EXPECT_EQ(out2[0], (2.0f + 6.0f) / 2);   // max(2, -1), max(6, -3)
  EXPECT_EQ(out2[1], (10.0f + 4.0f) / 2);  // max(-2, 10), max(4, -20)
}

TEST(BackendCallbacks, PageScoresMatchBruteForce) {
  Fixture f;
  uint32_t seed = 300;
  for (int64_t group : {1, 4})
    for (int64_t n : {1, 6})
      for (int64_t hd : {8, 13})
        for (int64_t pages : {1, 9}) {
          const int64_t kv_heads = 2, heads = kv_heads * group;
          F q({n, heads, hd}, random_floats(n * heads * hd, ++seed, -2, 2));
          // Summaries as page_key_summary makes them: kmax >= kmin elementwise.
          std::vector<float> a = random_floats(pages * kv_heads * hd, ++seed), b = random_floats(a.size(), ++seed);
          std::vector<float> hi(a.size()), lo(a.size());
          for (size_t i = 0; i < a.size(); ++i) {
            hi[i] = std::max(a[i], b[i]);
            lo[i] = std::min(a[i], b[i]);
          }
          F kmax({pages, kv_heads, hd}, hi), kmin({pages, kv_heads, hd}, lo), out({kv_heads, pages});
          ASSERT_EQ(f.api->page_scores(f.ctx, nullptr, &q, &kmax, &kmin, &out), DRIFT_OK);
          expect_near_all(out.data.data(), ref_page_scores(q, kmax, kmin), 1e-5,
                          "page_scores group " + std::to_string(group) + " n " + std::to_string(n) + " head_dim " +
                              std::to_string(hd) + " pages " + std::to_string(pages));
        }
  // Summaries need not be ordered: each term is the larger of the two dot products.
  F q({3, 4, 8}, random_floats(96, 400)), kmax({5, 2, 8}, random_floats(80, 401));
  F kmin({5, 2, 8}, random_floats(80, 402)), out({2, 5});
  ASSERT_EQ(f.api->page_scores(f.ctx, nullptr, &q, &kmax, &kmin, &out), DRIFT_OK);
  expect_near_all(out.data.data(), ref_page_scores(q, kmax, kmin), 1e-5, "unordered summaries");
  // No pages: nothing to score.
  F none({0, 2, 8}), out_none({2, 0});
  EXPECT_EQ(f.api->page_scores(f.ctx, nullptr, &q, &none, &none, &out_none), DRIFT_OK);
}

TEST(BackendCallbacks, PageScoresBadArgumentsAreRefused) {
  Fixture f;
  constexpr drift_status_t kInvalid = DRIFT_ERROR_INVALID_ARGUMENT;
  F q({3, 4, 8}, random_floats(96, 410)), kmax({5, 2, 8}, random_floats(80, 411));
  F kmin({5, 2, 8}, random_floats(80, 412)), out({2, 5});
  std::fill(out.data.begin(), out.data.end(), -7.0f);
  auto call = [&](const drift_tensor_t* q_arg, const drift_tensor_t* hi, const drift_tensor_t* lo, drift_tensor_t* o) {
    return f.api->page_scores(f.ctx, nullptr, q_arg, hi, lo, o);
  };
  // dtypes: q I32, summaries or out not F32.
  I qi({3, 4, 8}), kmax_i({5, 2, 8}), out_i({2, 5});
  EXPECT_EQ(call(&qi, &kmax, &kmin, &out), kInvalid) << "I32 q";
  EXPECT_EQ(call(&q, &kmax_i, &kmin, &out), kInvalid) << "I32 kmax";
  EXPECT_EQ(call(&q, &kmax, &kmax_i, &out), kInvalid) << "I32 kmin";
  EXPECT_EQ(call(&q, &kmax, &kmin, &out_i), kInvalid) << "I32 out";
  F q_f16({3, 4, 8});
  q_f16.t.dtype = DRIFT_DTYPE_F16;  // not the CPU backend's activation dtype
  EXPECT_EQ(call(&q_f16, &kmax, &kmin, &out), kInvalid) << "F16 q on the CPU";
  // shapes: q not 3-D, no rows, heads not a multiple of the kv heads, head_dim mismatch,
  // kmin unlike kmax, summaries not 3-D, out transposed or short.
  F q2d({3, 32}), q_empty({0, 4, 8}), q3({3, 3, 8}), q_hd({3, 4, 6});
  EXPECT_EQ(call(&q2d, &kmax, &kmin, &out), kInvalid) << "q [n, heads * head_dim]";
  EXPECT_EQ(call(&q_empty, &kmax, &kmin, &out), kInvalid) << "n = 0";
  EXPECT_EQ(call(&q3, &kmax, &kmin, &out), kInvalid) << "3 heads over 2 kv heads";
  EXPECT_EQ(call(&q_hd, &kmax, &kmin, &out), kInvalid) << "head_dim 6 vs 8";
  F kmin_short({4, 2, 8}), kmin_heads({5, 1, 8}), flat({5, 16}), kmax_no_heads({5, 0, 8});
  EXPECT_EQ(call(&q, &kmax, &kmin_short, &out), kInvalid) << "kmin has fewer pages";
  EXPECT_EQ(call(&q, &kmax, &kmin_heads, &out), kInvalid) << "kmin has other kv heads";
  EXPECT_EQ(call(&q, &flat, &flat, &out), kInvalid) << "summaries [pages, kv_heads * head_dim]";
  EXPECT_EQ(call(&q, &kmax_no_heads, &kmax_no_heads, &out), kInvalid) << "no kv heads";
  F out_t({5, 2}), out_short({2, 4}), out_flat({10});
  EXPECT_EQ(call(&q, &kmax, &kmin, &out_t), kInvalid) << "out [pages, kv_heads]";
  EXPECT_EQ(call(&q, &kmax, &kmin, &out_short), kInvalid) << "out [kv_heads, pages - 1]";
  EXPECT_EQ(call(&q, &kmax, &kmin, &out_flat), kInvalid) << "out [kv_heads * pages]";
  // NULL, strided, on another device.
  EXPECT_EQ(call(nullptr, &kmax, &kmin, &out), kInvalid);
  EXPECT_EQ(call(&q, nullptr, &kmin, &out), kInvalid);
  EXPECT_EQ(call(&q, &kmax, nullptr, &out), kInvalid);
  EXPECT_EQ(call(&q, &kmax, &kmin, nullptr), kInvalid);
  F strided({5, 2, 8});
  strided.t.strides[0] = 8;
  strided.t.strides[1] = 40;
  EXPECT_EQ(call(&q, &strided, &kmin, &out), kInvalid) << "transposed kmax";
  F q_gpu({3, 4, 8});
  q_gpu.t.device = DRIFT_DEVICE_CUDA;
  EXPECT_EQ(call(&q_gpu, &kmax, &kmin, &out), kInvalid) << "a CUDA tensor on the CPU backend";
  // out sharing memory with an input, exactly or in part.
  drift_tensor_t in_kmax = out.t;
  in_kmax.data = kmax.data.data() + 3;
  EXPECT_EQ(call(&q, &kmax, &kmin, &in_kmax), kInvalid) << "out inside kmax";
  drift_tensor_t in_kmin = out.t;
  in_kmin.data = kmin.data.data();
  EXPECT_EQ(call(&q, &kmax, &kmin, &in_kmin), kInvalid) << "out at kmin";
  drift_tensor_t in_q = out.t;
  in_q.data = q.data.data() + 90;
  EXPECT_EQ(call(&q, &kmax, &kmin, &in_q), kInvalid) << "out overlapping q's end";
  // Nothing above wrote into out (nor into the inputs it overlapped).
  EXPECT_TRUE(std::all_of(out.data.begin(), out.data.end(), [](float v) { return v == -7.0f; }));
  EXPECT_EQ(kmax.data, random_floats(80, 411));
  EXPECT_EQ(q.data, random_floats(96, 410));
  EXPECT_EQ(call(&q, &kmax, &kmin, &out), DRIFT_OK);

  // The table of an engine without the service (no compute callbacks) answers NOT_SUPPORTED.
  HostState bare;
  PluginContext context("bare", "", &bare);
  const drift_host_api_t* api = context.api();
  ASSERT_TRUE(DRIFT_HAS_FIELD(api, drift_host_api_t, page_scores));
  EXPECT_GE(api->abi_minor, 3u);
  EXPECT_EQ(api->page_scores(api->ctx, nullptr, &q, &kmax, &kmin, &out), DRIFT_ERROR_NOT_SUPPORTED);
  drift_tensor_t states{};
  EXPECT_EQ(api->query_states(api->ctx, 7, 0, &states), DRIFT_ERROR_NOT_SUPPORTED);
}

// ---- tensors and checkpoints ----------------------------------------------------------------

TEST(BackendCallbacks, TensorAllocCopyFree) {
  Fixture f;
  const int64_t shape[] = {2, 3};
  drift_tensor_t a{}, b{};
  ASSERT_EQ(f.api->tensor_alloc(f.ctx, DRIFT_DTYPE_F32, 2, shape, &a), DRIFT_OK);
  ASSERT_EQ(f.api->tensor_alloc(f.ctx, DRIFT_DTYPE_F32, 2, shape, &b), DRIFT_OK);
  EXPECT_EQ(a.strides[0], 3);
  for (int i = 0; i < 6; ++i) static_cast<float*>(a.data)[i] = float(i) * 0.5f;
  ASSERT_EQ(f.api->tensor_copy(f.ctx, nullptr, &a, &b), DRIFT_OK);
  EXPECT_EQ(static_cast<float*>(b.data)[5], 2.5f);
  drift_tensor_t ints{};
  ASSERT_EQ(f.api->tensor_alloc(f.ctx, DRIFT_DTYPE_I32, 2, shape, &ints), DRIFT_OK);
  EXPECT_EQ(f.api->tensor_copy(f.ctx, nullptr, &a, &ints), DRIFT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(f.api->tensor_alloc(f.ctx, 42, 2, shape, &ints), DRIFT_ERROR_INVALID_ARGUMENT);
  f.api->tensor_free(f.ctx, &a);
  f.api->tensor_free(f.ctx, &b);
  f.api->tensor_free(f.ctx, &ints);
  EXPECT_EQ(a.data, nullptr);
}

// The checkpoint as the file says it is: header length, JSON header, raw little-endian F32.
std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> read_f32_safetensors(
    const std::string& path, const std::set<std::string>& wanted) {
  std::ifstream in(path, std::ios::binary);
  uint64_t header_len = 0;
  in.read(reinterpret_cast<char*>(&header_len), 8);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  const auto j = nlohmann::json::parse(header);
  std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> out;
  for (const auto& name : wanted) {
    const auto& e = j.at(name);
    EXPECT_EQ(e.at("dtype"), "F32");
    const auto begin = e.at("data_offsets")[0].get<uint64_t>(), end = e.at("data_offsets")[1].get<uint64_t>();
    std::vector<float> data((end - begin) / 4);
    in.seekg(static_cast<std::streamoff>(8 + header_len + begin));
    in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(end - begin));
    out[name] = {e.at("shape").get<std::vector<int64_t>>(), std::move(data)};
  }
  return out;
}

TEST(BackendCallbacks, LoadSafetensorsGoldenModel) {
  Fixture f;
  const std::string path = test::test_data_path("golden/llama-tiny/model.safetensors");
  ASSERT_FALSE(path.empty());
  const char* names[] = {"model.layers.1.self_attn.k_proj.weight", "model.norm.weight"};
  const auto want = read_f32_safetensors(path, {names[0], names[1]});
  drift_tensor_t out[2]{};
  ASSERT_EQ(f.api->load_safetensors(f.ctx, path.c_str(), names, 2, out), DRIFT_OK);
  for (int i = 0; i < 2; ++i) {
    const auto& [shape, data] = want.at(names[i]);
    EXPECT_EQ(out[i].dtype, DRIFT_DTYPE_F32);
    EXPECT_EQ(out[i].device, DRIFT_DEVICE_CPU);
    ASSERT_EQ(out[i].ndim, static_cast<int32_t>(shape.size())) << names[i];
    EXPECT_EQ(std::vector<int64_t>(out[i].shape, out[i].shape + out[i].ndim), shape);
    EXPECT_EQ(out[i].strides[out[i].ndim - 1], 1);
    ASSERT_EQ(tensor_numel(out[i]), static_cast<int64_t>(data.size()));
    EXPECT_EQ(std::memcmp(out[i].data, data.data(), data.size() * 4), 0) << names[i];
    f.api->tensor_free(f.ctx, &out[i]);
  }
  // Missing tensor / missing file: NOT_FOUND, nothing allocated, out left zeroed.
  const char* missing[] = {"model.norm.weight", "model.no_such.weight"};
  drift_tensor_t none[2]{};
  EXPECT_EQ(f.api->load_safetensors(f.ctx, path.c_str(), missing, 2, none), DRIFT_ERROR_NOT_FOUND);
  EXPECT_EQ(none[0].data, nullptr);
  EXPECT_EQ(f.api->load_safetensors(f.ctx, "/nonexistent/model.safetensors", names, 1, none),
            DRIFT_ERROR_NOT_FOUND);
  // A directory works too (model.safetensors inside it).
  const std::string dir = path.substr(0, path.rfind('/'));
  ASSERT_EQ(f.api->load_safetensors(f.ctx, dir.c_str(), names + 1, 1, out), DRIFT_OK);
  EXPECT_EQ(out[0].shape[0], 64);
  f.api->tensor_free(f.ctx, &out[0]);
}

// ABI 1.2: integer and bool tensors (an EAGLE-3 head's d2t and t2d) load as I32.
TEST(BackendCallbacks, LoadSafetensorsReadsIntegerTensorsAsI32) {
  Fixture f;
  const std::string path = test::test_data_path("models/stories260K-eagle3/model.safetensors");
  ASSERT_FALSE(path.empty());
  const char* names[] = {"d2t", "t2d"};
  drift_tensor_t out[2]{};
  ASSERT_EQ(f.api->load_safetensors(f.ctx, path.c_str(), names, 2, out), DRIFT_OK);
  SafetensorsCheckpoint head(path);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(out[i].dtype, DRIFT_DTYPE_I32) << names[i];
    const TensorInfo& info = head.get(names[i]);
    EXPECT_EQ(info.dtype, i == 0 ? DType::I64 : DType::Bool);
    ASSERT_EQ(tensor_numel(out[i]), info.shape[0]);
    const auto* got = static_cast<const int32_t*>(out[i].data);
    for (int64_t j = 0; j < info.shape[0]; ++j) {
      int64_t want = 0;
      if (i == 0)
        std::memcpy(&want, static_cast<const char*>(info.data) + 8 * j, 8);
      else
        want = static_cast<const uint8_t*>(info.data)[j] != 0;
      ASSERT_EQ(got[j], want) << names[i] << "[" << j << "]";
    }
    f.api->tensor_free(f.ctx, &out[i]);
  }
  // An int64 value beyond int32 is refused (the logged error names the tensor).
  const std::string dir = test::make_temp_dir("drift-cb-int");
  std::vector<uint8_t> file(8);
  const std::string header = R"({"big":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})";
  const uint64_t len = header.size();
  std::memcpy(file.data(), &len, 8);
  file.insert(file.end(), header.begin(), header.end());
  const int64_t huge = int64_t{1} << 40;
  file.insert(file.end(), reinterpret_cast<const uint8_t*>(&huge), reinterpret_cast<const uint8_t*>(&huge) + 8);
  std::ofstream(dir + "/big.safetensors", std::ios::binary)
      .write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  const char* big_name[] = {"big"};
  EXPECT_EQ(f.api->load_safetensors(f.ctx, (dir + "/big.safetensors").c_str(), big_name, 1, out), DRIFT_ERROR);
}

// A tensor of 16-bit words (F16 / BF16 bit patterns) for write_safetensors.
Tensor half_tensor(DType dtype, const std::vector<uint16_t>& bits) {
  Tensor t = Tensor::zeros({static_cast<int64_t>(bits.size())}, dtype);
  std::memcpy(t.data(), bits.data(), t.nbytes());
  return t;
}

TEST(BackendCallbacks, LoadSafetensorsConvertsHalfPrecisionAcrossShards) {
  Fixture f;
  const std::string dir = test::make_temp_dir("drift-cb-shards");
  // Bit patterns with exact values: bf16 0x3FC0 = 1.5, 0xC000 = -2, 0x3E80 = 0.25;
  // f16 0x3E00 = 1.5, 0xC000 = -2, 0x7BFF = 65504 (the largest finite half).
  write_safetensors(dir + "/model-00001-of-00002.safetensors",
                    {{"a.bf16", half_tensor(DType::BF16, {0x3FC0, 0xC000, 0x3E80})}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors",
                    {{"b.f16", half_tensor(DType::F16, {0x3E00, 0xC000, 0x7BFF})}});
  const nlohmann::json index = {{"weight_map",
                                 {{"a.bf16", "model-00001-of-00002.safetensors"},
                                  {"b.f16", "model-00002-of-00002.safetensors"}}}};
  std::ofstream(dir + "/model.safetensors.index.json") << index.dump();

  const char* names[] = {"b.f16", "a.bf16"};
  drift_tensor_t out[2]{};
  ASSERT_EQ(f.api->load_safetensors(f.ctx, dir.c_str(), names, 2, out), DRIFT_OK);
  // Converted to the activation dtype (F32 on the CPU backend), in the order asked for.
  for (const drift_tensor_t& t : out) {
    EXPECT_EQ(t.dtype, DRIFT_DTYPE_F32);
    ASSERT_EQ(t.ndim, 1);
    ASSERT_EQ(t.shape[0], 3);
  }
  const float* b = static_cast<const float*>(out[0].data);
  const float* a = static_cast<const float*>(out[1].data);
  EXPECT_EQ(std::vector<float>(b, b + 3), (std::vector<float>{1.5f, -2.0f, 65504.0f}));
  EXPECT_EQ(std::vector<float>(a, a + 3), (std::vector<float>{1.5f, -2.0f, 0.25f}));
  for (drift_tensor_t& t : out) f.api->tensor_free(f.ctx, &t);
}

// ---- bad arguments: an error status, no crash, no write --------------------------------------

TEST(BackendCallbacks, BadArgumentsAreRefused) {
  Fixture f;
  constexpr drift_status_t kInvalid = DRIFT_ERROR_INVALID_ARGUMENT;
  F x({2, 4}, random_floats(8, 16)), w({3, 4}), w_bad({3, 5}), out({2, 3}), out_bad({2, 4});
  I xi({2, 4});
  // gemm: wrong dtype, k mismatch, wrong out, wrong bias, NULL, strided, aliasing.
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &xi, &w, nullptr, &out), kInvalid);
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &x, &w_bad, nullptr, &out), kInvalid);
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &x, &w, nullptr, &out_bad), kInvalid);
  F bias_bad({4});
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &x, &w, &bias_bad, &out), kInvalid);
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, nullptr, &w, nullptr, &out), kInvalid);
  F xt({2, 4});
  xt.t.strides[0] = 1;
  xt.t.strides[1] = 2;  // a transposed view
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &xt, &w, nullptr, &out), kInvalid);
  F square({4, 4}), xsq({4, 4});
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &xsq, &square, nullptr, &xsq), kInvalid);  // out == x
  // All-zero strides read as contiguous.
  F xz({2, 4});
  std::fill(std::begin(xz.t.strides), std::end(xz.t.strides), 0);
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &xz, &w, nullptr, &out), DRIFT_OK);
  // A CUDA-tagged tensor on the CPU backend.
  F xc({2, 4});
  xc.t.device = DRIFT_DEVICE_CUDA;
  EXPECT_EQ(f.api->gemm(f.ctx, nullptr, &xc, &w, nullptr, &out), kInvalid);

  // rms_norm: weight of the wrong size, out of another shape, negative eps, partial overlap.
  F weight({4}), weight_bad({3}), big({3, 4});
  EXPECT_EQ(f.api->rms_norm(f.ctx, nullptr, &x, &weight_bad, 1e-5f, &x), kInvalid);
  EXPECT_EQ(f.api->rms_norm(f.ctx, nullptr, &x, &weight, 1e-5f, &out), kInvalid);
  EXPECT_EQ(f.api->rms_norm(f.ctx, nullptr, &x, &weight, -1.0f, &x), kInvalid);
  drift_tensor_t shifted = x.t;
  shifted.data = x.data.data() + 1;
  shifted.shape[0] = 1;
  drift_tensor_t x_row = x.t;
  x_row.shape[0] = 1;
  EXPECT_EQ(f.api->rms_norm(f.ctx, nullptr, &x_row, &weight, 1e-5f, &shifted), kInvalid);

  // rope: head_dim other than the model's, positions of the wrong length or dtype.
  F q6({2, 1, 6}), q8({2, 1, 8});
  I pos2({2}), pos3({3});
  F posf({2});
  EXPECT_EQ(f.api->rope(f.ctx, nullptr, &q6, &pos2), kInvalid);
  EXPECT_EQ(f.api->rope(f.ctx, nullptr, &q8, &pos3), kInvalid);
  EXPECT_EQ(f.api->rope(f.ctx, nullptr, &q8, &posf), kInvalid);

  // softmax / silu_mul / top_k / embedding.
  EXPECT_EQ(f.api->softmax(f.ctx, nullptr, &x, 0.0f, &x), kInvalid);
  EXPECT_EQ(f.api->softmax(f.ctx, nullptr, &x, 1.0f, &out), kInvalid);
  EXPECT_EQ(f.api->silu_mul(f.ctx, nullptr, &x, &out, &x), kInvalid);
  F vals({2, 5});
  I idx({2, 5}), idx3({2, 3});
  EXPECT_EQ(f.api->top_k(f.ctx, nullptr, &x, 5, &vals, &idx), kInvalid);  // k > v
  EXPECT_EQ(f.api->top_k(f.ctx, nullptr, &x, 3, &out, &idx), kInvalid);   // indices [2, 5] for k 3
  EXPECT_EQ(f.api->top_k(f.ctx, nullptr, &x, 3, &idx3, &idx3), kInvalid); // values must be F32
  EXPECT_EQ(f.api->top_k(f.ctx, nullptr, &x, 0, &out, &idx3), kInvalid);
  F table({10, 4}), emb_out({2, 3});
  EXPECT_EQ(f.api->embedding(f.ctx, nullptr, &table, &pos2, &emb_out), kInvalid);
  EXPECT_EQ(f.api->embedding(f.ctx, nullptr, &table, &posf, &x), kInvalid);

  // attention: q/out mismatch, heads not a multiple of kv heads, K/V mismatch, half dense.
  DenseAttention d;
  I dpos({d.n_q}, {0, 1, 2});
  auto a = d.args();
  a.q_positions = &dpos.t;
  F out_small({d.n_q, d.heads, 4});
  a.out = &out_small.t;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), kInvalid);
  a = d.args();
  a.q_positions = &dpos.t;
  F k3({d.n_kv, 3, d.hd}), v3({d.n_kv, 3, d.hd});
  a.k = &k3.t;
  a.v = &v3.t;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), kInvalid);
  a = d.args();
  a.q_positions = &dpos.t;
  F v_short({d.n_kv - 1, d.kv_heads, d.hd});
  a.v = &v_short.t;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), kInvalid);
  a = d.args();
  a.q_positions = &dpos.t;
  a.v = nullptr;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), kInvalid);
  a = d.args();  // no positions and no mask
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), kInvalid);
  a = d.args();
  a.q_positions = &dpos.t;
  a.struct_size = 8;
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, &a), kInvalid);
  EXPECT_EQ(f.api->attention(f.ctx, nullptr, nullptr), kInvalid);
  // Nothing above wrote into the outputs.
  EXPECT_TRUE(std::all_of(d.out.data.begin(), d.out.data.end(), [](float v) { return v == 0.0f; }));
}

// A device backend whose ops do nothing: what the services check before they reach it.
class FakeCudaBackend final : public Backend {
 public:
  std::string name() const override { return "fake-cuda"; }
  Device device() const override { return Device::CUDA; }
  DType compute_dtype() const override { return DType::BF16; }
  Tensor alloc(std::vector<int64_t>, DType) override { return {}; }
  Tensor upload(const Tensor& t) override { return t; }
  Tensor to_host_f32(const Tensor& t) override { return t; }
  void embedding(const Tensor&, const std::vector<int32_t>&, Tensor&) override {}
  void rms_norm(const Tensor&, const Tensor&, float, Tensor&) override {}
  void linear(const Tensor&, const Tensor&, const Tensor&, Tensor&) override {}
  void rope(Tensor&, const std::vector<int32_t>&, const std::vector<float>&, float) override {}
  void write_kv(LayerKV&, const Tensor&, const Tensor&, const AttentionMetadata&) override {}
  void attention(const Tensor&, const LayerKV&, const AttentionMetadata&, float, int64_t, Tensor&) override {}
  void silu_mul(const Tensor&, Tensor&) override {}
  void add_inplace(Tensor&, const Tensor&) override {}
  void split_columns(const Tensor&, const std::vector<Tensor*>&) override {}
  void join_columns(const std::vector<const Tensor*>&, Tensor&) override {}
  void gather_rows(const Tensor&, const std::vector<int32_t>&, Tensor&) override {}
  void copy(const Tensor&, Tensor&) override {}
  void copy_page(std::vector<LayerKV>&, int32_t, int32_t, int64_t) override {}
  void copy_slots(std::vector<LayerKV>&, std::span<const int64_t>, std::span<const int64_t>) override {}
};

// On a device backend the services take tensors on that device in its compute dtype (F32 where
// the op allows it): a host tensor or a wrong dtype is refused, naming the argument, before any
// op runs. (tests/cuda/plugin_services_gpu_test.cc runs them on a real GPU.)
TEST(BackendCallbacks, DeviceBackendsTakeTensorsOnTheirDevice) {
  HostState state;
  FakeCudaBackend backend;
  ModelConfig model = tiny_model();
  install_compute_callbacks(state.callbacks, backend, model, compute_rope_frequencies(model.rope, model.head_dim));
  PluginContext context("cuda", "", &state);
  const drift_host_api_t* api = context.api();
  F x({2, 4}), w({3, 4}), out({2, 3});
  EXPECT_EQ(api->gemm(api->ctx, nullptr, &x, &w, nullptr, &out), DRIFT_ERROR_INVALID_ARGUMENT) << "host tensors";
  for (drift_tensor_t* t : {&x.t, &w.t, &out.t}) t->device = DRIFT_DEVICE_CUDA;
  EXPECT_EQ(api->gemm(api->ctx, nullptr, &x, &w, nullptr, &out), DRIFT_ERROR_INVALID_ARGUMENT)
      << "F32 weights on a BF16 backend";
  w.t.dtype = DRIFT_DTYPE_BF16;
  out.t.dtype = DRIFT_DTYPE_I32;
  EXPECT_EQ(api->gemm(api->ctx, nullptr, &x, &w, nullptr, &out), DRIFT_ERROR_INVALID_ARGUMENT) << "I32 output";
  out.t.dtype = DRIFT_DTYPE_F32;
  x.t.dtype = DRIFT_DTYPE_BF16;
  EXPECT_EQ(api->gemm(api->ctx, nullptr, &x, &w, nullptr, &out), DRIFT_OK) << "BF16 x BF16 -> F32 is accepted";
}

}  // namespace
}  // namespace drift
