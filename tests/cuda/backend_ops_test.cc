// Every CUDA backend op against the CPU backend (the fp32 oracle) over many shapes, by
// normalised error ||cuda - cpu|| / ||cpu||, with the CPU fed the same rounded inputs (bf16 and fp16 storage); plus
// the batch invariance the speculation core relies on (a row's result does not depend on the
// other rows of its forward). Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <tuple>

#include "core/cpu_backend.h"
#ifdef DRIFT_WITH_CUDA
#include "core/cuda/cuda_backend.h"
#endif
#include "support/cuda_device.h"
#include "support/golden.h"

namespace drift {
namespace {

// Every op test runs with bf16 and with fp16 storage (the parameter).
class CudaOpsTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = test::cuda_backend_or_null(why, GetParam());
    if (!gpu_) GTEST_SKIP() << why;
  }

  Tensor random(std::vector<int64_t> shape, float scale = 1.0f) {
    Tensor t = Tensor::zeros(std::move(shape));
    std::normal_distribution<float> dist(0.0f, scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = dist(rng_);
    return t;
  }
  // bf16 on the GPU, and the same values back on the host as fp32 for the CPU reference.
  std::pair<Tensor, Tensor> bf16_pair(const Tensor& host) {
    Tensor dev = gpu_->upload(host);
    return {dev, gpu_->to_host_f32(dev)};
  }
  Tensor f32_on_gpu(const Tensor& host) {
    Tensor dev = gpu_->alloc(host.shape(), DType::F32);
    gpu_->copy(host, dev);
    return dev;
  }
  Tensor gpu_out(std::vector<int64_t> shape, std::optional<DType> dtype = std::nullopt) {
    return gpu_->alloc(std::move(shape), dtype.value_or(GetParam()));
  }
  Tensor host(const Tensor& dev) { return gpu_->to_host_f32(dev); }

  static double rel_error(const Tensor& ours, const Tensor& ref) {
    EXPECT_EQ(ours.numel(), ref.numel());
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      const double a = ours.as<float>()[i], b = ref.as<float>()[i];
      if (!std::isfinite(a)) return INFINITY;
      diff += (a - b) * (a - b);
      norm += b * b;
    }
    return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
  }
  static bool bit_equal(const Tensor& a, const Tensor& b, int64_t offset_a, int64_t offset_b, int64_t n) {
    return std::memcmp(a.as<float>() + offset_a, b.as<float>() + offset_b, n * sizeof(float)) == 0;
  }

  std::unique_ptr<Backend> gpu_;
  CpuBackend cpu_;
  std::mt19937 rng_{1234};
};

TEST_P(CudaOpsTest, LinearMatchesCpuOverShapesRowsBiasAndOutputType) {
  struct Shape {
    int64_t n, k;
  };
  for (Shape s : {Shape{64, 64}, Shape{172, 64}, Shape{64, 172}, Shape{576, 96}, Shape{1000, 256},
                  Shape{4096, 1024}}) {
    for (int64_t rows : {1, 2, 3, 7, 8, 9, 16, 17, 31, 32, 33, 64, 300}) {
      for (bool with_bias : {false, true}) {
        for (DType out_type : {GetParam(), DType::F32}) {
          auto [x, x_ref] = bf16_pair(random({rows, s.k}));
          auto [w, w_ref] = bf16_pair(random({s.n, s.k}, 0.05f));
          Tensor b, b_ref;
          if (with_bias) std::tie(b, b_ref) = bf16_pair(random({s.n}));
          Tensor ref = Tensor::zeros({rows, s.n});
          cpu_.linear(x_ref, w_ref, b_ref, ref);
          Tensor out = gpu_out({rows, s.n}, out_type);
          gpu_->linear(x, w, b, out);
          const double err = rel_error(host(out), ref);
          EXPECT_LE(err, out_type == DType::F32 ? 1e-5 : 8e-3)
              << "n " << s.n << " k " << s.k << " rows " << rows << " bias " << with_bias << " out "
              << dtype_name(out_type);
        }
      }
    }
  }
}

// The skinny path serves decode (1 row) and verification (up to 32): each row's result must be
// the same bits whatever the number of rows, or speculation would not reproduce plain decoding.
TEST_P(CudaOpsTest, SkinnyLinearIsBatchInvariant) {
  // n 6144 (384 blocks): rows 1-8 take the three-blocks-an-SM variant on a 132-SM GPU, more rows
  // the two-block one; their per-warp k order must agree.
  for (int64_t n : {300, 6144})
    for (int64_t k : {64, 172, 1024, 4104}) {
      auto [x, x_ref] = bf16_pair(random({32, k}));
      auto [w, w_ref] = bf16_pair(random({n, k}, 0.05f));
      Tensor all = gpu_out({32, n}, DType::F32);
      gpu_->linear(x, w, Tensor(), all);
      const Tensor all_host = host(all);
      for (int64_t rows = 1; rows <= 32; ++rows) {
        Tensor x_part = gpu_->upload(test::first_rows(x_ref, rows));
        Tensor part = gpu_out({rows, n}, DType::F32);
        gpu_->linear(x_part, w, Tensor(), part);
        EXPECT_TRUE(bit_equal(host(part), all_host, 0, 0, rows * n)) << "n " << n << " k " << k << " rows " << rows;
        // The row alone (first position of its tile) equals its place in the 32-row call.
        Tensor alone_x = gpu_->upload(test::rows_of(x_ref, rows - 1, 1));
        Tensor alone = gpu_out({1, n}, DType::F32);
        gpu_->linear(alone_x, w, Tensor(), alone);
        EXPECT_TRUE(bit_equal(host(alone), all_host, 0, (rows - 1) * n, n))
            << "n " << n << " k " << k << " row " << rows - 1;
      }
    }
}

// The mixture of experts up to 32 rows a forward (decode, verification): each row's output is the
// bits of that row alone (the router's skinny GEMM, one-block routing, the experts' GEMVs), so a
// verified draft token sees exactly what decoding it would. Above 32 rows (the grouped GEMM on
// tensor cores, cuBLASLt's router) a row stays within rounding of it.
TEST_P(CudaOpsTest, MixtureOfExpertsRowsEqualEachRowAloneUpTo32Rows) {
  const int64_t hidden = 64, inter = 64, experts = 8;
  MoeShape shape;
  shape.experts_per_token = 2;
  std::uniform_int_distribution<int> byte(0, 255), exponent(120, 126);
  auto packed = [&](std::vector<int64_t> shape_of, bool scales) {
    std::vector<uint8_t> bytes(
        static_cast<size_t>(std::accumulate(shape_of.begin(), shape_of.end(), int64_t{1}, std::multiplies<int64_t>())));
    for (auto& b : bytes) b = static_cast<uint8_t>(scales ? exponent(rng_) : byte(rng_));
    return gpu_->load_bytes(RawTensor{bytes.data(), DType::U8, shape_of});
  };
  for (bool mxfp4 : {false, true}) {
    MoeWeights w;
    w.router = gpu_->upload(random({experts, hidden}, 0.5f));
    w.router_bias = gpu_->upload(random({experts}, 0.1f));
    for (auto [p, outputs, inputs] : {std::tuple{&w.gate_up, 2 * inter, hidden}, std::tuple{&w.down, hidden, inter}}) {
      if (mxfp4) {
        p->blocks = packed({experts, outputs, inputs / 32, 16}, false);
        p->scales = packed({experts, outputs, inputs / 32}, true);
      } else {
        p->dense = gpu_->upload(random({experts, outputs, inputs}, 0.1f));
      }
      p->bias = gpu_->upload(random({experts, outputs}, 0.1f));
    }
    for (int64_t rows : {7, 32, 48}) {
      const Tensor x_host = host(gpu_->upload(random({rows, hidden})));
      Tensor out = gpu_out({rows, hidden});
      gpu_->moe_mlp(gpu_->upload(x_host), w, shape, out);
      const Tensor all = host(out);
      for (int64_t r = 0; r < rows; ++r) {
        Tensor one = gpu_out({1, hidden});
        gpu_->moe_mlp(gpu_->upload(test::rows_of(x_host, r, 1)), w, shape, one);
        const Tensor alone = host(one);
        const std::string what =
            std::string(mxfp4 ? "mxfp4" : "dense") + " rows " + std::to_string(rows) + " row " + std::to_string(r);
        if (rows <= 32) {
          EXPECT_TRUE(bit_equal(alone, all, 0, r * hidden, hidden)) << what;
        } else {
          EXPECT_LT(rel_error(test::rows_of(all, r, 1), alone), 2e-2) << what;
        }
      }
    }
  }
}

// A paged KV cache with random contents and sequences whose pages are scattered over it.
struct PagedCase {
  int64_t head_dim, num_heads, num_kv_heads, block_size;
};

class PagedFixture {
 public:
  PagedFixture(CudaOpsTest& t, const PagedCase& c, int64_t num_pages) : c_(c) {
    const int64_t slots = num_pages * c.block_size;
    Tensor k = t_random(t, {slots, c.num_kv_heads, c.head_dim});
    Tensor v = t_random(t, {slots, c.num_kv_heads, c.head_dim});
    std::tie(gpu_kv.k, cpu_kv.k) = pair(t, k);
    std::tie(gpu_kv.v, cpu_kv.v) = pair(t, v);
    free_pages.resize(num_pages);
    std::iota(free_pages.begin(), free_pages.end(), 0);
    std::shuffle(free_pages.begin(), free_pages.end(), rng);
  }
  // A new sequence of `len` positions: returns its index in meta.block_tables.
  int32_t add_sequence(int64_t len) {
    std::vector<int32_t> table;
    for (int64_t p = 0; p < (len + c_.block_size - 1) / c_.block_size; ++p) {
      table.push_back(free_pages.back());
      free_pages.pop_back();
    }
    meta.block_tables.push_back(table);
    return static_cast<int32_t>(meta.block_tables.size() - 1);
  }
  void add_query(int32_t seq, int32_t kv_len) {
    meta.token_seq.push_back(seq);
    meta.kv_len.push_back(kv_len);
    meta.slots.push_back(0);
  }

  static Tensor t_random(CudaOpsTest& t, std::vector<int64_t> shape);
  static std::pair<Tensor, Tensor> pair(CudaOpsTest& t, const Tensor& host);

  PagedCase c_;
  LayerKV gpu_kv, cpu_kv;
  AttentionMetadata meta;
  std::vector<int32_t> free_pages;
  std::mt19937 rng{99};
};

class CudaAttentionTest : public CudaOpsTest {
 public:
  friend class PagedFixture;
  // Runs attention for fixture `f` with fresh queries on both backends; returns (gpu, cpu) outputs.
  std::pair<Tensor, Tensor> run(PagedFixture& f) {
    const int64_t tokens = static_cast<int64_t>(f.meta.token_seq.size());
    auto [q, q_ref] = bf16_pair(random({tokens, f.c_.num_heads, f.c_.head_dim}));
    return run_with(f, q, q_ref);
  }
  // gpu_variant / cpu_variant: sinks and a window (GPT-OSS), the same values on either side.
  std::pair<Tensor, Tensor> run_with(PagedFixture& f, const Tensor& q, const Tensor& q_ref,
                                     const AttentionVariant& gpu_variant = {},
                                     const AttentionVariant& cpu_variant = {}) {
    const int64_t tokens = q.dim(0);
    const float scale = 1.0f / std::sqrt(static_cast<float>(f.c_.head_dim));
    Tensor out = gpu_out({tokens, f.c_.num_heads, f.c_.head_dim});
    gpu_->attention_variant(q, f.gpu_kv, f.meta, scale, f.c_.block_size, gpu_variant, out);
    Tensor ref = Tensor::zeros({tokens, f.c_.num_heads, f.c_.head_dim});
    cpu_.attention_variant(q_ref, f.cpu_kv, f.meta, scale, f.c_.block_size, cpu_variant, ref);
    return {host(out), ref};
  }
  // window > 0: a windowed layer with sinks (GPT-OSS's), else plain attention.
  void check_chain_invariance(const PagedCase& c, int64_t prefix, int64_t chain, int64_t window = 0);
  using CudaOpsTest::bf16_pair;
  using CudaOpsTest::random;
};

Tensor PagedFixture::t_random(CudaOpsTest& t, std::vector<int64_t> shape) {
  return static_cast<CudaAttentionTest&>(t).random(std::move(shape));
}
std::pair<Tensor, Tensor> PagedFixture::pair(CudaOpsTest& t, const Tensor& host) {
  return static_cast<CudaAttentionTest&>(t).bf16_pair(host);
}

// Random ancestor-closed tree masks are not needed here: the kernel takes any mask, so each node
// sees a random subset of the tree slots before it plus itself.
void add_tree(PagedFixture& f, int32_t seq, int64_t prefix, int64_t nodes, std::mt19937& rng) {
  const int64_t words = (nodes + 63) / 64;
  if (f.meta.mask_words == 0) f.meta.mask_words = words;
  ASSERT_EQ(f.meta.mask_words, words) << "one mask width per batch";
  f.meta.mask_start.resize(f.meta.token_seq.size(), 1 << 30);  // earlier queries: no mask
  f.meta.mask.resize(f.meta.token_seq.size() * words, 0);
  for (int64_t i = 0; i < nodes; ++i) {
    f.add_query(seq, static_cast<int32_t>(prefix + i + 1));
    f.meta.mask_start.push_back(static_cast<int32_t>(prefix));
    std::vector<uint64_t> row(words, 0);
    for (int64_t j = 0; j <= i; ++j)
      if (j == i || rng() % 2) row[j / 64] |= uint64_t{1} << (j % 64);
    f.meta.mask.insert(f.meta.mask.end(), row.begin(), row.end());
  }
}

TEST_P(CudaAttentionTest, DecodePrefillAndTreeQueriesMatchCpu) {
  std::mt19937 rng(7);
  for (PagedCase c : {PagedCase{8, 8, 4, 16}, PagedCase{16, 4, 2, 16}, PagedCase{32, 4, 1, 16},
                      PagedCase{64, 8, 8, 16}, PagedCase{64, 8, 1, 32}, PagedCase{128, 32, 8, 16},
                      PagedCase{128, 8, 2, 64}, PagedCase{256, 4, 4, 16}, PagedCase{128, 64, 8, 16}}) {
    for (int64_t context : {1, 7, 16, 17, 255, 256, 257, 1000, 4100}) {
      for (int64_t tree_nodes : {0, 1, 5, 16, 64, 100}) {
        PagedFixture f(*this, c, (context + 200) / c.block_size + 16);
        const int32_t seq = f.add_sequence(context + tree_nodes);
        f.add_query(seq, static_cast<int32_t>(context));  // decode
        const int64_t chunk = std::min<int64_t>(context, 9);
        for (int64_t i = context - chunk; i < context; ++i) f.add_query(seq, static_cast<int32_t>(i + 1));  // prefill
        if (tree_nodes > 0) add_tree(f, seq, context, tree_nodes, rng);
        auto [out, ref] = run(f);
        EXPECT_LE(rel_error(out, ref), 1e-2) << "head_dim " << c.head_dim << " heads " << c.num_heads << "/"
                                             << c.num_kv_heads << " block " << c.block_size << " context "
                                             << context << " tree " << tree_nodes;
      }
    }
  }
}

// A partial-verification view (SpecPV): each kv head attends to its own subset of a sequence's
// full pages plus the tail pages holding a draft tree, under the tree mask; decode queries of a
// second sequence use their own per-head lists without a mask.
TEST_P(CudaAttentionTest, PageListsPerKvHeadMatchCpu) {
  std::mt19937 rng(5);
  for (PagedCase c : {PagedCase{64, 8, 8, 16}, PagedCase{128, 32, 8, 16}, PagedCase{128, 16, 4, 16},
                      PagedCase{64, 8, 1, 32}}) {
    for (int64_t full_pages : {1, 3, 40, 300}) {
      const int64_t tree_nodes = 13, words = 1;
      PagedFixture f(*this, c, 2 * (full_pages + 2) + 4);
      const int64_t h_count = c.num_kv_heads;
      f.meta.tables_per_seq = h_count;
      std::vector<std::vector<int32_t>> tables;
      for (int s = 0; s < 2; ++s) {
        const int32_t seq = f.add_sequence(full_pages * c.block_size + tree_nodes);
        tables.push_back(f.meta.block_tables[seq]);
      }
      f.meta.block_tables.clear();
      std::vector<int64_t> kept(2 * h_count);  // full pages each (sequence, kv head) keeps
      for (int s = 0; s < 2; ++s)
        for (int64_t h = 0; h < h_count; ++h) {
          std::vector<int32_t> list;
          for (int64_t p = 0; p < full_pages; ++p)
            if (p == 0 || rng() % 3 != 0) list.push_back(tables[s][p]);  // a sink page and a random subset
          kept[s * h_count + h] = static_cast<int64_t>(list.size());
          list.insert(list.end(), tables[s].begin() + full_pages, tables[s].end());  // the tree's tail
          f.meta.block_tables.push_back(list);
        }
      f.meta.mask_words = words;
      for (int64_t i = 0; i < tree_nodes; ++i) {  // sequence 0: tree nodes
        f.meta.token_seq.push_back(0);
        f.meta.slots.push_back(0);
        uint64_t row = 0;
        for (int64_t j = 0; j <= i; ++j)
          if (j == i || rng() % 2) row |= uint64_t{1} << j;
        f.meta.mask.push_back(row);
        for (int64_t h = 0; h < h_count; ++h) {
          f.meta.kv_len.push_back(static_cast<int32_t>(kept[h] * c.block_size + i + 1));
          f.meta.mask_start.push_back(static_cast<int32_t>(kept[h] * c.block_size));
        }
      }
      f.meta.token_seq.push_back(1);  // sequence 1: a decode query over its lists, no mask
      f.meta.slots.push_back(0);
      f.meta.mask.push_back(0);
      for (int64_t h = 0; h < h_count; ++h) {
        f.meta.kv_len.push_back(static_cast<int32_t>(kept[h_count + h] * c.block_size + 1));
        f.meta.mask_start.push_back(1 << 30);
      }
      auto [out, ref] = run(f);
      EXPECT_LE(rel_error(out, ref), 1e-2) << "head_dim " << c.head_dim << " heads " << c.num_heads << "/"
                                           << c.num_kv_heads << " full pages " << full_pages;
    }
  }
}

TEST_P(CudaAttentionTest, LongContextDecodeMatchesCpu) {
  for (int64_t context : {16384, 32768}) {
    PagedCase c{128, 32, 8, 16};
    PagedFixture f(*this, c, context / c.block_size + 1);
    const int32_t seq = f.add_sequence(context);
    f.add_query(seq, static_cast<int32_t>(context));
    f.add_query(seq, static_cast<int32_t>(context / 2 + 3));
    auto [out, ref] = run(f);
    EXPECT_LE(rel_error(out, ref), 1e-2) << "context " << context;
  }
}

// A query's output is the same bits alone or among other queries (other sequences, prefill rows,
// trees), and a tree node on a chain equals the same token decoded after the chain was accepted.
// Chains end inside a 64-position tile, across a tile boundary (320) and across a split boundary
// (384), so a verify block walks tiles and splits a lone decode never sees. At 8300 a lone decode
// has 65 splits, so its merge folds two staged chunks (64 + 1) and must still match the fused fold.
TEST_P(CudaAttentionTest, BatchInvariantAcrossCompositionAndChainVerification) {
  for (PagedCase c : {PagedCase{64, 8, 2, 16}, PagedCase{128, 32, 8, 16}})
    for (int64_t prefix : {300, 316, 380, 8300})
      // 12 rows: the one-warp decode kernel; 24: the 64-row one; 80 (head_dim 128 on sm_90): the
      // warpgroup kernel, behind 600 other queries (fused), with the chain's tree mask.
      for (int64_t chain : {3, 6, 20}) {
        SCOPED_TRACE(testing::Message() << "head_dim " << c.head_dim << " prefix " << prefix << " chain " << chain);
        check_chain_invariance(c, prefix, chain);
      }
}

// The same with GPT-OSS's windowed layers (head_dim 64, 64 heads over 8, sinks): the flash kernels
// skip what is behind a row's window (fused blocks start at their rows' earliest position, split
// blocks wholly behind it exit, the merge starts at the row's window split), and a chain node still
// gets the bits it gets decoded alone. Window 16 is shallower than the 20-node chain: its deepest
// nodes see only part of their path (the window counts tree slots by rank).
TEST_P(CudaAttentionTest, WindowedLayersWithSinksBatchInvariant) {
  for (int64_t window : {16, 128})
    for (int64_t prefix : {300, 8300})
      for (int64_t chain : {3, 20}) {
        SCOPED_TRACE(testing::Message() << "window " << window << " prefix " << prefix << " chain " << chain);
        check_chain_invariance(PagedCase{64, 64, 8, 16}, prefix, chain, window);
      }
}

void CudaAttentionTest::check_chain_invariance(const PagedCase& c, int64_t prefix, int64_t chain, int64_t window) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  auto [sinks, sinks_ref] = bf16_pair(random({c.num_heads}, 2.0f));
  const AttentionVariant gpu_variant{window > 0 ? &sinks : nullptr, window};
  const AttentionVariant cpu_variant{window > 0 ? &sinks_ref : nullptr, window};
  PagedFixture alone(*this, c, std::max<int64_t>(64, (prefix + chain) / c.block_size + 1));
  const int32_t seq = alone.add_sequence(prefix + chain);
  auto [q, q_ref] = bf16_pair(random({chain, c.num_heads, c.head_dim}));
  const int64_t per_row = c.num_heads * c.head_dim, row_bytes = per_row * 2;
  // Each query decoded in a forward of its own.
  std::vector<Tensor> decoded;
  for (int64_t i = 0; i < chain; ++i) {
    PagedFixture one(*this, c, 1);
    one.gpu_kv = alone.gpu_kv;
    one.cpu_kv = alone.cpu_kv;
    one.meta.block_tables = alone.meta.block_tables;
    one.add_query(seq, static_cast<int32_t>(prefix + i + 1));
    Tensor qi = Tensor::wrap(static_cast<char*>(q.data()) + i * row_bytes, {1, c.num_heads, c.head_dim}, GetParam(),
                             Device::CUDA, nullptr);
    Tensor qi_ref =
        Tensor::wrap(q_ref.as<float>() + i * per_row, {1, c.num_heads, c.head_dim}, DType::F32, Device::CPU, nullptr);
    decoded.push_back(run_with(one, qi, qi_ref, gpu_variant, cpu_variant).first);
  }

  // The same queries as a chain verified with a tree mask (all ancestors visible), behind other
  // work: 3 queries (the tensor-core kernel splits positions over blocks and merges), then 600
  // single-query tiles (enough blocks that it walks each context in one block and folds there).
  for (int64_t others : {3, 600}) {
    PagedFixture mixed(*this, c, 64);
    mixed.gpu_kv = alone.gpu_kv;
    mixed.cpu_kv = alone.cpu_kv;
    mixed.meta.block_tables = alone.meta.block_tables;
    const auto other = static_cast<int32_t>(mixed.meta.block_tables.size());
    mixed.meta.block_tables.push_back(alone.meta.block_tables[0]);
    mixed.meta.block_tables.push_back(alone.meta.block_tables[0]);
    const int32_t lens[] = {5, 77, 290};
    for (int64_t i = 0; i < others; ++i)  // alternating sequences: one query tile each
      mixed.add_query(others == 3 ? other : other + static_cast<int32_t>(i % 2), lens[i % 3]);
    mixed.meta.mask_words = 1;
    mixed.meta.mask_start.assign(mixed.meta.token_seq.size(), 1 << 30);
    mixed.meta.mask.assign(mixed.meta.token_seq.size(), 0);
    for (int64_t i = 0; i < chain; ++i) {
      mixed.add_query(seq, static_cast<int32_t>(prefix + chain));
      mixed.meta.mask_start.push_back(static_cast<int32_t>(prefix));
      mixed.meta.mask.push_back((uint64_t{1} << (i + 1)) - 1);
    }
    auto [q_other, q_other_ref] = bf16_pair(random({others, c.num_heads, c.head_dim}));
    Tensor q_mixed = gpu_->alloc({others + chain, c.num_heads, c.head_dim}, GetParam());
    Tensor head = Tensor::wrap(q_mixed.data(), {others, c.num_heads, c.head_dim}, GetParam(), Device::CUDA, nullptr);
    Tensor tail = Tensor::wrap(static_cast<char*>(q_mixed.data()) + others * row_bytes,
                               {chain, c.num_heads, c.head_dim}, GetParam(), Device::CUDA, nullptr);
    gpu_->copy(q_other, head);
    gpu_->copy(q, tail);
    Tensor q_mixed_ref = Tensor::zeros({others + chain, c.num_heads, c.head_dim});
    std::memcpy(q_mixed_ref.as<float>(), q_other_ref.as<float>(), others * per_row * sizeof(float));
    std::memcpy(q_mixed_ref.as<float>() + others * per_row, q_ref.as<float>(), chain * per_row * sizeof(float));
    Tensor out = gpu_out({others + chain, c.num_heads, c.head_dim});
    gpu_->attention_variant(q_mixed, mixed.gpu_kv, mixed.meta, scale, c.block_size, gpu_variant, out);
    const Tensor verified = host(out);
    Tensor ref = Tensor::zeros({others + chain, c.num_heads, c.head_dim});
    cpu_.attention_variant(q_mixed_ref, mixed.cpu_kv, mixed.meta, scale, c.block_size, cpu_variant, ref);
    EXPECT_LE(rel_error(verified, ref), 1e-2) << others << " other queries";
    // The chain is one query tile: its rows must have the single-query bits.
    for (int64_t i = 0; i < chain; ++i)
      EXPECT_TRUE(bit_equal(verified, decoded[i], (others + i) * per_row, 0, per_row))
          << "chain node " << i << " behind " << others << " other queries";
  }
}

// Whole prompts prefilled in one forward run on the 128-row blocks (a 64-query tile of a GQA group
// of 4 or 8 is 256 or 512 rows; enough tiles that the block walks each context itself and folds
// its splits there): each row must have the bits of the same query decoded alone (the one-warp
// decode kernel and the merge), at the first and last positions of tiles, splits and the prompt.
// The last case is a GPT-OSS windowed layer (window 128, sinks): fused blocks start at their rows'
// earliest visible position.
TEST_P(CudaAttentionTest, PrefillRowsEqualTheSameQueriesDecodedAlone) {
  auto [sinks, sinks_ref] = bf16_pair(random({64}, 2.0f));
  for (PagedCase c :
       {PagedCase{128, 32, 8, 16}, PagedCase{64, 16, 2, 16}, PagedCase{128, 64, 8, 32}, PagedCase{64, 64, 8, 16}}) {
    SCOPED_TRACE(testing::Message() << "head_dim " << c.head_dim << " heads " << c.num_heads << "/" << c.num_kv_heads);
    const bool windowed = c.head_dim == 64 && c.num_heads == 64;
    const AttentionVariant gpu_variant{windowed ? &sinks : nullptr, windowed ? 128 : 0};
    const AttentionVariant cpu_variant{windowed ? &sinks_ref : nullptr, windowed ? 128 : 0};
    constexpr int64_t kPrompt = 1100, kPrompts = 5;
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    PagedFixture f(*this, c, kPrompts * ((kPrompt + c.block_size - 1) / c.block_size) + 1);
    for (int64_t s = 0; s < kPrompts; ++s) {
      const int32_t seq = f.add_sequence(kPrompt);
      for (int64_t i = 0; i < kPrompt; ++i) f.add_query(seq, static_cast<int32_t>(i + 1));
    }
    const int64_t tokens = kPrompts * kPrompt, per_row = c.num_heads * c.head_dim;
    auto [q, q_ref] = bf16_pair(random({tokens, c.num_heads, c.head_dim}));
    Tensor out = gpu_out({tokens, c.num_heads, c.head_dim});
    gpu_->attention_variant(q, f.gpu_kv, f.meta, scale, c.block_size, gpu_variant, out);
    const Tensor prefilled = host(out);
    for (int64_t s : {int64_t{0}, kPrompts - 1})
      for (int64_t i : {0, 1, 63, 64, 127, 128, 129, 255, 700, 1023, 1099}) {
        PagedFixture one(*this, c, 1);
        one.gpu_kv = f.gpu_kv;
        one.cpu_kv = f.cpu_kv;
        one.meta.block_tables = f.meta.block_tables;
        one.add_query(static_cast<int32_t>(s), static_cast<int32_t>(i + 1));
        const int64_t t = s * kPrompt + i;
        const int64_t row_bytes = per_row * 2;  // bf16 or fp16
        Tensor qi = Tensor::wrap(static_cast<char*>(q.data()) + t * row_bytes, {1, c.num_heads, c.head_dim},
                                 GetParam(), Device::CUDA, nullptr);
        Tensor qi_ref = Tensor::wrap(q_ref.as<float>() + t * per_row, {1, c.num_heads, c.head_dim}, DType::F32,
                                     Device::CPU, nullptr);
        auto [decoded, ref] = run_with(one, qi, qi_ref, gpu_variant, cpu_variant);
        EXPECT_LE(rel_error(decoded, ref), 1e-2) << "prompt " << s << " position " << i;
        EXPECT_TRUE(bit_equal(prefilled, decoded, t * per_row, 0, per_row)) << "prompt " << s << " position " << i;
      }
  }
}

// GPT-OSS's attention variants (the chunked kernel, kernels/cuda/paged_attention.cu) against the CPU:
// sinks (a logit per head in the softmax's denominator), sliding windows from one position to
// more than the context, crossing page and 64-position chunk boundaries, with decode, prefill and
// tree queries (a tree row's window counts its visible tree slots as its path, as the CPU does),
// GQA groups of 1 to 8, with and without sinks (a window of 1000 is longer than most contexts here:
// the CPU then attends to everything).
TEST_P(CudaAttentionTest, SinksAndSlidingWindowsMatchCpu) {
  std::mt19937 rng(11);
  // head_dim 64 and 128: the flash kernels; 8 and 256: the chunked kernel.
  for (PagedCase c : {PagedCase{64, 8, 1, 16}, PagedCase{64, 64, 8, 16}, PagedCase{128, 8, 8, 32},
                      PagedCase{8, 4, 2, 16}, PagedCase{256, 4, 2, 16}}) {
    auto [sinks, sinks_ref] = bf16_pair(random({c.num_heads}, 2.0f));
    // One fixture (the costly part: random KV for the whole context) serves every window.
    for (int64_t context : {1, 17, 128, 129, 300, 2100, 9000})
      for (int64_t tree_nodes : {0, 5, 64}) {
        PagedFixture f(*this, c, (context + 100) / c.block_size + 8);
        const int32_t seq = f.add_sequence(context + tree_nodes);
        f.add_query(seq, static_cast<int32_t>(context));
        for (int64_t i = std::max<int64_t>(0, context - 9); i < context; ++i)
          f.add_query(seq, static_cast<int32_t>(i + 1));
        if (tree_nodes > 0) add_tree(f, seq, context, tree_nodes, rng);
        const std::vector<int32_t> pages = f.meta.block_tables[seq];
        const int64_t tokens = static_cast<int64_t>(f.meta.token_seq.size());
        auto [q, q_ref] = bf16_pair(random({tokens, c.num_heads, c.head_dim}));
        const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
        for (int64_t window : {1, 5, 16, 128, 1000}) {
          // Pages wholly behind every query's window are gone (-1), as the engine's window page
          // group releases them: the kernels must never read them.
          const int64_t seen_from = std::max<int64_t>(0, context - 10 - window);
          auto& table = f.meta.block_tables[seq];
          table = pages;
          for (int64_t page = 0; (page + 1) * c.block_size <= seen_from; ++page) table[page] = -1;
          for (bool with_sinks : {false, true}) {
            SCOPED_TRACE(testing::Message() << "head_dim " << c.head_dim << " heads " << c.num_heads << "/"
                                            << c.num_kv_heads << " context " << context << " window " << window
                                            << " tree " << tree_nodes << (with_sinks ? " sinks" : ""));
            const AttentionVariant gpu_variant{with_sinks ? &sinks : nullptr, window};
            const AttentionVariant cpu_variant{with_sinks ? &sinks_ref : nullptr, window};
            Tensor out = gpu_out({tokens, c.num_heads, c.head_dim});
            gpu_->attention_variant(q, f.gpu_kv, f.meta, scale, c.block_size, gpu_variant, out);
            Tensor ref = Tensor::zeros({tokens, c.num_heads, c.head_dim});
            cpu_.attention_variant(q_ref, f.cpu_kv, f.meta, scale, c.block_size, cpu_variant, ref);
            EXPECT_LE(rel_error(host(out), ref), 1e-2);
          }
        }
      }
  }
}

// The rows of a context's last page past its end hold whatever was there (never written, stale,
// NaN), and a kernel that stages whole pages reads them: they must not reach the output (P V's zero
// weights times NaN is NaN). Block sizes 8 to 256 and 48; a 1100-position prompt ends inside a
// page at each.
TEST_P(CudaAttentionTest, PrefillIgnoresWhatPagesHoldPastTheContext) {
  for (int64_t block_size : {8, 16, 32, 48, 256}) {
    SCOPED_TRACE(testing::Message() << "block size " << block_size);
    const PagedCase c{128, 32, 8, block_size};
    constexpr int64_t kPrompt = 1100, kPrompts = 3;
    const int64_t pages = (kPrompt + block_size - 1) / block_size;
    PagedFixture f(*this, c, kPrompts * pages + 1);
    for (int64_t s = 0; s < kPrompts; ++s) {
      const int32_t seq = f.add_sequence(kPrompt);
      for (int64_t i = 0; i < kPrompt; ++i) f.add_query(seq, static_cast<int32_t>(i + 1));
    }
    const int64_t tokens = kPrompts * kPrompt, per_row = c.num_heads * c.head_dim;
    auto [q, q_ref] = bf16_pair(random({tokens, c.num_heads, c.head_dim}));
    const Tensor clean = run_with(f, q, q_ref).first;
    // NaN in every slot of each sequence's last page past the prompt, in both caches.
    const int64_t tail = pages * block_size - kPrompt, row_bytes = c.num_kv_heads * c.head_dim * 2;
    Tensor nan_host = Tensor::zeros({tail, c.num_kv_heads, c.head_dim});
    std::fill(nan_host.as<float>(), nan_host.as<float>() + nan_host.numel(), NAN);
    const Tensor nan_rows = bf16_pair(nan_host).first;
    for (const auto& table : f.meta.block_tables)
      for (Tensor* cache : {&f.gpu_kv.k, &f.gpu_kv.v}) {
        const int64_t first_slot = table.back() * block_size + (block_size - tail);
        Tensor rows = Tensor::wrap(static_cast<char*>(cache->data()) + first_slot * row_bytes,
                                   {tail, c.num_kv_heads, c.head_dim}, GetParam(), Device::CUDA, nullptr);
        gpu_->copy(nan_rows, rows);
      }
    auto [poisoned, ref] = run_with(f, q, q_ref);
    EXPECT_LE(rel_error(poisoned, ref), 1e-2);
    EXPECT_TRUE(bit_equal(poisoned, clean, 0, 0, tokens * per_row));
  }
}

TEST_P(CudaOpsTest, NormsRopeActivationsAndDataMovementMatchCpu) {
  for (int64_t rows : {1, 5, 64}) {
    // add_rms_norm runs on a cluster of 8 blocks when dim splits into 8 slices of 4-element steps
    // of at most 1024 elements (64 and 896 with idle threads, 4096, 8192 with none) and on one
    // block otherwise (8, 172, 8224).
    for (int64_t dim : {8, 64, 172, 896, 4096, 8192, 8224}) {
      auto [w, w_ref] = bf16_pair(random({dim}));
      // rms_norm from fp32 and from bf16, to bf16 and fp32, and in place.
      Tensor x_host = random({rows, dim});
      Tensor x32 = f32_on_gpu(x_host);
      Tensor ref = Tensor::zeros({rows, dim});
      cpu_.rms_norm(x_host, w_ref, 1e-5f, ref);
      for (DType out_type : {GetParam(), DType::F32}) {
        Tensor out = gpu_out({rows, dim}, out_type);
        gpu_->rms_norm(x32, w, 1e-5f, out);
        EXPECT_LE(rel_error(host(out), ref), out_type == DType::F32 ? 1e-6 : 8e-3) << rows << "x" << dim;
      }
      auto [xb, xb_ref] = bf16_pair(x_host);
      cpu_.rms_norm(xb_ref, w_ref, 1e-5f, ref);
      gpu_->rms_norm(xb, w, 1e-5f, xb);
      EXPECT_LE(rel_error(host(xb), ref), 8e-3) << "in place " << rows << "x" << dim;

      // add_rms_norm: residual += delta; out = norm(residual).
      auto [delta, delta_ref] = bf16_pair(random({rows, dim}));
      Tensor residual = f32_on_gpu(x_host);
      Tensor residual_ref = Tensor::zeros({rows, dim});
      std::memcpy(residual_ref.data(), x_host.data(), x_host.nbytes());
      Tensor normed = gpu_out({rows, dim});
      gpu_->add_rms_norm(residual, delta, w, 1e-5f, normed);
      cpu_.add_inplace(residual_ref, delta_ref);
      cpu_.rms_norm(residual_ref, w_ref, 1e-5f, ref);
      EXPECT_LE(rel_error(host(residual), residual_ref), 1e-7);
      EXPECT_LE(rel_error(host(normed), ref), 8e-3);
    }
  }
  // RoPE at positions up to 40K (llama3 contexts) and head dims 8..256.
  std::mt19937 rng(3);
  for (int64_t head_dim : {8, 16, 64, 128, 256}) {
    const int64_t tokens = 13, heads = 3;
    std::vector<int32_t> positions;
    for (int64_t t = 0; t < tokens; ++t) positions.push_back(static_cast<int32_t>(rng() % 40000));
    std::vector<float> inv_freq(head_dim / 2);
    for (int64_t i = 0; i < head_dim / 2; ++i) inv_freq[i] = std::pow(500000.0f, -2.0f * i / head_dim);
    auto [x, x_ref] = bf16_pair(random({tokens, heads, head_dim}));
    gpu_->rope(x, positions, inv_freq, 1.0f);
    cpu_.rope(x_ref, positions, inv_freq, 1.0f);
    EXPECT_LE(rel_error(host(x), x_ref), 8e-3) << "head_dim " << head_dim;
  }
  // SwiGLU, embedding, row gather, column split.
  {
    auto [gu, gu_ref] = bf16_pair(random({7, 2 * 172}));
    Tensor out = gpu_out({7, 172}), ref = Tensor::zeros({7, 172});
    gpu_->silu_mul(gu, out);
    cpu_.silu_mul(gu_ref, ref);
    EXPECT_LE(rel_error(host(out), ref), 8e-3);

    // Rows of 16-byte chunks (96; 8200: more chunks than one batch of the block's loads) and not (100).
    for (int64_t dim : {96, 100, 8200}) {
      auto [table, table_ref] = bf16_pair(random({50, dim}));
      const std::vector<int32_t> ids = {3, 0, 49, 3, 17};
      Tensor e = gpu_out({5, dim}, DType::F32), e_ref = Tensor::zeros({5, dim});
      gpu_->embedding(table, ids, e);
      cpu_.embedding(table_ref, ids, e_ref);
      EXPECT_EQ(rel_error(host(e), e_ref), 0.0) << dim;

      Tensor g = gpu_out({3, dim}), g_ref = Tensor::zeros({3, dim});
      gpu_->gather_rows(table, {49, 1, 1}, g);
      cpu_.gather_rows(table_ref, {49, 1, 1}, g_ref);
      EXPECT_EQ(rel_error(host(g), g_ref), 0.0) << dim;
    }

    auto [qkv, qkv_ref] = bf16_pair(random({5, 6 * 16}));
    Tensor a = gpu_out({5, 4, 16}), b = gpu_out({5, 1, 16}), c = gpu_out({5, 1, 16});
    Tensor a_ref = Tensor::zeros({5, 4, 16}), b_ref = Tensor::zeros({5, 1, 16}), c_ref = Tensor::zeros({5, 1, 16});
    gpu_->split_columns(qkv, {&a, &b, &c});
    cpu_.split_columns(qkv_ref, {&a_ref, &b_ref, &c_ref});
    EXPECT_EQ(rel_error(host(a), a_ref) + rel_error(host(b), b_ref) + rel_error(host(c), c_ref), 0.0);
  }
}

// KV writes, copy-on-write page copies and compaction moves (in order: a destination that is a
// later source is read before it is overwritten) give the CPU backend's cache exactly.
TEST_P(CudaOpsTest, KvWritePageCopyAndSlotCompactionMatchCpu) {
  const int64_t block = 16, pages = 6, nkv = 2, d = 32;
  auto [k0, k0_ref] = bf16_pair(random({pages * block, nkv, d}));
  auto [v0, v0_ref] = bf16_pair(random({pages * block, nkv, d}));
  std::vector<LayerKV> gpu_layers{{k0, v0}}, cpu_layers{{k0_ref, v0_ref}};
  auto [k, k_ref] = bf16_pair(random({4, nkv, d}));
  auto [v, v_ref] = bf16_pair(random({4, nkv, d}));
  AttentionMetadata meta;
  meta.slots = {5, 17, 18, 95};
  gpu_->write_kv(gpu_layers[0], k, v, meta);
  cpu_.write_kv(cpu_layers[0], k_ref, v_ref, meta);
  gpu_->copy_page(gpu_layers, 1, 4, block);
  cpu_.copy_page(cpu_layers, 1, 4, block);
  const std::vector<int64_t> src = {21, 23, 24, 40}, dst = {20, 21, 23, 24};  // chained: 21 -> 20, then 23 -> 21 ...
  gpu_->copy_slots(gpu_layers, src, dst);
  cpu_.copy_slots(cpu_layers, src, dst);
  EXPECT_EQ(rel_error(host(gpu_layers[0].k), cpu_layers[0].k), 0.0);
  EXPECT_EQ(rel_error(host(gpu_layers[0].v), cpu_layers[0].v), 0.0);
}

// The fused attention prologue (split + rope + KV write in one kernel) gives exactly the bits of
// the separate ops, and matches the CPU's; a padding token (slot -1) writes no KV.
TEST_P(CudaOpsTest, FusedRopeKvWriteEqualsTheSeparateOps) {
  const std::vector<float> inv_freq = {1.0f, 0.3f, 0.1f, 0.03f, 0.01f, 0.003f, 0.001f, 0.0003f};
  struct Heads {
    int64_t q, kv, dim;
  };
  for (const Heads& shape : {Heads{4, 2, 16}, Heads{8, 8, 16}, Heads{32, 8, 16}}) {
    const int64_t nh = shape.q, nkv = shape.kv, d = shape.dim;  // plain locals: lambdas capture them
    const int64_t tokens = 5, slots = 64;
    std::vector<float> freqs(inv_freq.begin(), inv_freq.begin() + d / 2);
    auto [qkv, qkv_ref] = bf16_pair(random({tokens, (nh + 2 * nkv) * d}));
    const std::vector<int32_t> positions = {0, 7, 300, 4097, 5};
    AttentionMetadata meta;
    meta.slots = {3, 9, 10, 63, -1};
    auto run = [&](Backend& b, const Tensor& input, bool fused) {
      const DType dt = b.compute_dtype();
      LayerKV kv{b.alloc({slots, nkv, d}, dt), b.alloc({slots, nkv, d}, dt)};
      Tensor q = b.alloc({tokens, nh, d}, dt), k = b.alloc({tokens, nkv, d}, dt), v = b.alloc({tokens, nkv, d}, dt);
      if (fused)
        b.qkv_rope_write(input, q, k, v, kv, positions, freqs, 0.9f, meta);
      else
        b.Backend::qkv_rope_write(input, q, k, v, kv, positions, freqs, 0.9f, meta);
      return std::tuple<Tensor, Tensor, Tensor>{b.to_host_f32(q), b.to_host_f32(kv.k), b.to_host_f32(kv.v)};
    };
    auto [q1, k1, v1] = run(*gpu_, qkv, true);
    auto [q0, k0, v0] = run(*gpu_, qkv, false);
    EXPECT_TRUE(bit_equal(q1, q0, 0, 0, q0.numel())) << nh << "/" << nkv;
    EXPECT_TRUE(bit_equal(k1, k0, 0, 0, k0.numel())) << nh << "/" << nkv;
    EXPECT_TRUE(bit_equal(v1, v0, 0, 0, v0.numel())) << nh << "/" << nkv;
    auto [qc, kc, vc] = run(cpu_, qkv_ref, false);
    EXPECT_LT(rel_error(q1, qc), 1e-2);
    EXPECT_LT(rel_error(k1, kc), 1e-2);
    EXPECT_EQ(rel_error(v1, vc), 0.0);
  }
}

// Weights loaded for a fused op (pair_span: the CUDA backend moves each pair of output features
// into one GEMM tile so the GEMM's epilogue finishes the op) give the bits of the same weights
// loaded stacked through the separate ops, for every row count of the skinny path (decode and
// verification); more rows (cuBLASLt, then the pointwise kernel reading the paired layout) stay
// within rounding of them; both match the CPU. Shapes whose spans cannot be paired (not a
// multiple of 16) keep the stacked layout and take the separate ops; so does k % 8 != 0 (the
// CUDA-core GEMM, then the SwiGLU kernel reading the paired layout), and so does a backend made
// with DRIFT_CUDA_PAIRED_WEIGHTS=0 (stacked whatever the pair_span).
TEST_P(CudaOpsTest, PairedWeightsFuseSwigluIntoTheGemmExactly) {
  ::setenv("DRIFT_CUDA_PAIRED_WEIGHTS", "0", 1);
  std::string why;
  const std::unique_ptr<Backend> unpaired = test::cuda_backend_or_null(why, GetParam());
  ::unsetenv("DRIFT_CUDA_PAIRED_WEIGHTS");
  ASSERT_TRUE(unpaired) << why;
  const std::vector<int64_t> row_counts = {1, 3, 8, 9, 17, 25, 32, 33, 70};
  for (int64_t inter : {64, 172, 344, 1376})  // 172: 2 * inter is not a multiple of 16
    for (int64_t k : {64, 100, 256}) {
      const Tensor gate = random({inter, k}, 0.1f), up = random({inter, k}, 0.1f);
      const std::vector<RawTensor> blocks = {{gate.data(), DType::F32, gate.shape()},
                                             {up.data(), DType::F32, up.shape()}};
      const Tensor paired = gpu_->load_weight(blocks, 2 * inter), stacked = gpu_->load_weight(blocks);
      const Tensor w_ref = host(stacked);
      const Tensor unpaired_w = unpaired->load_weight(blocks, 2 * inter);
      for (int64_t rows : row_counts) {
        auto [x, x_ref] = bf16_pair(random({rows, k}));
        Tensor scratch = gpu_out({rows, 2 * inter}), act = gpu_out({rows, inter}), act0 = gpu_out({rows, inter});
        gpu_->linear_swiglu(x, paired, scratch, act);
        gpu_->Backend::linear_swiglu(x, stacked, scratch, act0);
        Tensor x_u = unpaired->upload(x_ref), scratch_u = unpaired->alloc({rows, 2 * inter}, GetParam());
        Tensor act_u = unpaired->alloc({rows, inter}, GetParam());
        unpaired->linear_swiglu(x_u, unpaired_w, scratch_u, act_u);
        EXPECT_TRUE(bit_equal(unpaired->to_host_f32(act_u), host(act0), 0, 0, rows * inter))
            << "unpaired " << inter << "/" << k << "/" << rows;
        Tensor ref_scratch = Tensor::zeros({rows, 2 * inter}), ref = Tensor::zeros({rows, inter});
        cpu_.linear_swiglu(x_ref, w_ref, ref_scratch, ref);
        const Tensor ours = host(act), separate = host(act0);
        if (rows <= 32)
          EXPECT_TRUE(bit_equal(ours, separate, 0, 0, ours.numel())) << inter << "/" << k << "/" << rows;
        else
          EXPECT_LE(rel_error(ours, separate), 2e-3) << inter << "/" << k << "/" << rows;
        EXPECT_LE(rel_error(ours, ref), 1e-2) << inter << "/" << k << "/" << rows;
      }
    }
}

TEST_P(CudaOpsTest, PairedWeightsFuseRopeAndKvWriteIntoTheGemmExactly) {
  struct Heads {
    int64_t q, kv, dim;
  };
  const int64_t slots = 128, k = 96;
  std::mt19937 pick(7);
  // head_dim 8 cannot be paired (separate ops); 16 (whose paired order is the natural one), 32, 64
  // and 128 can.
  for (const Heads& shape : {Heads{4, 2, 8}, Heads{4, 2, 16}, Heads{2, 1, 32}, Heads{8, 2, 64}, Heads{4, 4, 128}})
    for (bool with_bias : {false, true})
      for (int64_t rows : {1, 5, 9, 17, 32, 40}) {
        const int64_t nh = shape.q, nkv = shape.kv, d = shape.dim;  // plain locals: lambdas capture them
        std::vector<float> freqs(d / 2);
        for (int64_t i = 0; i < d / 2; ++i) freqs[i] = std::pow(500000.0f, -2.0f * i / d);
        std::vector<int32_t> positions;
        AttentionMetadata meta;
        for (int64_t t = 0; t < rows; ++t) {
          positions.push_back(static_cast<int32_t>(pick() % 40000));
          meta.slots.push_back(t == 1 ? -1 : t * 3 % slots);  // token 1: padding, no KV
        }
        const Tensor wq = random({nh * d, k}, 0.1f), wk = random({nkv * d, k}, 0.1f), wv = random({nkv * d, k}, 0.1f);
        const Tensor bq = random({nh * d}), bk = random({nkv * d}), bv = random({nkv * d});
        const std::vector<RawTensor> w_blocks = {{wq.data(), DType::F32, wq.shape()},
                                                 {wk.data(), DType::F32, wk.shape()},
                                                 {wv.data(), DType::F32, wv.shape()}};
        const std::vector<RawTensor> b_blocks = {{bq.data(), DType::F32, bq.shape()},
                                                 {bk.data(), DType::F32, bk.shape()},
                                                 {bv.data(), DType::F32, bv.shape()}};
        auto [x, x_ref] = bf16_pair(random({rows, k}));
        auto run = [&](Backend& b, const Tensor& input, int64_t pair_span, bool fused) {
          const Tensor w = pair_span ? gpu_->load_weight(w_blocks, pair_span) : gpu_->load_weight(w_blocks);
          const Tensor bias = !with_bias  ? Tensor()
                              : pair_span ? gpu_->load_weight(b_blocks, pair_span)
                                          : gpu_->load_weight(b_blocks);
          const bool on_cpu = &b != gpu_.get();
          const Tensor w_used = on_cpu ? host(w) : w, bias_used = on_cpu && with_bias ? host(bias) : bias;
          const DType dt = b.compute_dtype();
          LayerKV kv{b.alloc({slots, nkv, d}, dt), b.alloc({slots, nkv, d}, dt)};
          Tensor qkv = b.alloc({rows, (nh + 2 * nkv) * d}, dt), q = b.alloc({rows, nh, d}, dt);
          Tensor kk = b.alloc({rows, nkv, d}, dt), vv = b.alloc({rows, nkv, d}, dt);
          if (fused)
            b.linear_qkv_rope_write(input, w_used, bias_used, qkv, q, kk, vv, kv, positions, freqs, 0.9f, meta);
          else
            b.Backend::linear_qkv_rope_write(input, w_used, bias_used, qkv, q, kk, vv, kv, positions, freqs, 0.9f,
                                             meta);
          return std::tuple<Tensor, Tensor, Tensor>{b.to_host_f32(q), b.to_host_f32(kv.k), b.to_host_f32(kv.v)};
        };
        auto [q1, k1, v1] = run(*gpu_, x, d, true);
        auto [q0, k0, v0] = run(*gpu_, x, 0, false);
        auto [qc, kc, vc] = run(cpu_, x_ref, 0, false);
        const std::string what = std::to_string(nh) + "/" + std::to_string(nkv) + "/" + std::to_string(d) + " rows " +
                                 std::to_string(rows) + " bias " + std::to_string(with_bias);
        if (rows <= 32) {
          EXPECT_TRUE(bit_equal(q1, q0, 0, 0, q0.numel())) << what;
          EXPECT_TRUE(bit_equal(k1, k0, 0, 0, k0.numel())) << what;
          EXPECT_TRUE(bit_equal(v1, v0, 0, 0, v0.numel())) << what;
        } else {
          EXPECT_LE(rel_error(q1, q0) + rel_error(k1, k0) + rel_error(v1, v0), 6e-3) << what;
        }
        EXPECT_LE(rel_error(q1, qc), 1e-2) << what;
        EXPECT_LE(rel_error(k1, kc), 1e-2) << what;
        EXPECT_LE(rel_error(v1, vc), 1e-2) << what;
      }
}

// The residual stream between two pre-norm blocks (core/cuda/cuda_backend_residual.cpp): the GEMM
// that adds into the stream (or the add kernel after cuBLASLt) leaves the next block's input
// factored (residual * norm weight, and per-16-column sums of squares), and the next projection
// scales each row's sums by its 1 / rms (in the skinny GEMM's epilogue up to 32 rows, after an
// fp32 cuBLASLt GEMM above). Checked over row counts around every path boundary (8 and 32) and
// shapes with a partial last group (100, 200) or k % 8 != 0 (kin 100: the CUDA-core GEMM and the
// add kernel; hidden 100: projections that form their rows), and a padding token:
// - the residual gets the bits of linear then add_inplace, and the sums are the host's (an fma a
//   column, in order, per group);
// - a row gets the same bits whatever the call's row count up to 32 (decode and verification);
// - the scaled projections are within rounding of the formed rows through the plain ops, and
//   every output matches the CPU's linear, add, rms_norm, SwiGLU / RoPE chain.
TEST_P(CudaOpsTest, ResidualStreamNormFactoredIntoTheNeighbouringGemms) {
  const float eps = 1e-5f;
  const int64_t inter = 64, heads = 4, kv_heads = 2, head_dim = 32, pool = 70, slots = 128;
  const int64_t qkv_width = (heads + 2 * kv_heads) * head_dim;
  std::vector<float> freqs(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) freqs[i] = std::pow(500000.0f, -2.0f * i / head_dim);
  for (int64_t hidden : {64, 100, 200, 1024})  // 100: the projections form their rows (k % 8 != 0)
    for (int64_t kin : {96, 100}) {
      const std::string shape = std::to_string(hidden) + "/" + std::to_string(kin);
      // Plain locals, not structured bindings: the lambda below captures them.
      const std::pair<Tensor, Tensor> out_w = bf16_pair(random({hidden, kin}, 0.1f)),
                                      out_b = bf16_pair(random({hidden}));
      const std::pair<Tensor, Tensor> norm = bf16_pair(random({hidden}));
      const Tensor &w_out = out_w.first, &w_out_ref = out_w.second, &b_out = out_b.first, &b_out_ref = out_b.second;
      const Tensor &norm_w = norm.first, &norm_w_ref = norm.second;
      const Tensor gate = random({inter, hidden}, 0.1f), up = random({inter, hidden}, 0.1f);
      const std::vector<RawTensor> gu_blocks = {{gate.data(), DType::F32, gate.shape()},
                                                {up.data(), DType::F32, up.shape()}};
      const Tensor gate_up = gpu_->load_weight(gu_blocks, 2 * inter), gate_up_ref = host(gpu_->load_weight(gu_blocks));
      const Tensor wq = random({heads * head_dim, hidden}, 0.1f), wk = random({kv_heads * head_dim, hidden}, 0.1f);
      const Tensor wv = random({kv_heads * head_dim, hidden}, 0.1f);
      const Tensor bq = random({heads * head_dim}), bk = random({kv_heads * head_dim}),
                   bv = random({kv_heads * head_dim});
      const std::vector<RawTensor> qkv_blocks = {{wq.data(), DType::F32, wq.shape()},
                                                 {wk.data(), DType::F32, wk.shape()},
                                                 {wv.data(), DType::F32, wv.shape()}};
      const std::vector<RawTensor> bias_blocks = {{bq.data(), DType::F32, bq.shape()},
                                                  {bk.data(), DType::F32, bk.shape()},
                                                  {bv.data(), DType::F32, bv.shape()}};
      const Tensor w_qkv = gpu_->load_weight(qkv_blocks, head_dim), w_qkv_ref = host(gpu_->load_weight(qkv_blocks));
      const Tensor b_qkv = gpu_->load_weight(bias_blocks, head_dim), b_qkv_ref = host(gpu_->load_weight(bias_blocks));
      const Tensor x_pool = host(gpu_->upload(random({pool, kin}))), residual_pool = random({pool, hidden});
      std::vector<int32_t> positions;
      for (int64_t t = 0; t < pool; ++t) positions.push_back(static_cast<int32_t>(t * 977 % 40000));
      struct Result {
        Tensor residual, sums, normed, act, q;
      };
      // linear_add_residual, then the block's two projections of its input: the backend's (or,
      // with `formed`, the Backend defaults': the rows formed first, then the plain ops).
      auto run = [&](int64_t rows, bool formed) {
        Tensor x = gpu_->upload(test::first_rows(x_pool, rows));
        Tensor residual = f32_on_gpu(test::first_rows(residual_pool, rows));
        Tensor sums = gpu_out({rows, residual_norm_groups(hidden)}, DType::F32), delta = gpu_out({rows, hidden});
        Tensor normed = gpu_out({rows, hidden});
        const bool factored =
            gpu_->linear_add_residual(x, w_out, b_out, delta, residual, NextNorm{norm_w, eps, normed, sums});
        EXPECT_EQ(factored, GetParam() == DType::BF16) << shape << " rows " << rows;  // fp16: formed (range)
        const NormedRows in{residual, norm_w, eps, normed, factored ? &sums : nullptr};
        Tensor scratch = gpu_out({rows, 2 * inter}), act = gpu_out({rows, inter}), qkv = gpu_out({rows, qkv_width});
        LayerKV kv{gpu_out({slots, kv_heads, head_dim}), gpu_out({slots, kv_heads, head_dim})};
        Tensor q = gpu_out({rows, heads, head_dim}), k = gpu_out({rows, kv_heads, head_dim});
        Tensor v = gpu_out({rows, kv_heads, head_dim});
        const std::vector<int32_t> pos(positions.begin(), positions.begin() + rows);
        AttentionMetadata meta;
        for (int64_t t = 0; t < rows; ++t) meta.slots.push_back(t == 1 ? -1 : t);  // token 1: padding, no KV
        if (formed) {
          gpu_->Backend::normed_linear_swiglu(in, gate_up, scratch, act);
          gpu_->Backend::normed_linear_qkv_rope_write(in, w_qkv, b_qkv, qkv, q, k, v, kv, pos, freqs, 1.0f, meta);
        } else {
          gpu_->normed_linear_swiglu(in, gate_up, scratch, act);
          gpu_->normed_linear_qkv_rope_write(in, w_qkv, b_qkv, qkv, q, k, v, kv, pos, freqs, 1.0f, meta);
        }
        gpu_->form_normed_rows(in);
        return Result{host(residual), factored ? host(sums) : Tensor(), host(normed), host(act), host(q)};
      };
      const Result all = run(32, false);
      for (int64_t rows : {1, 3, 8, 9, 17, 32, 40, 70}) {
        const std::string what = shape + " rows " + std::to_string(rows);
        const Result ours = run(rows, false), formed = run(rows, true);
        // The add: linear then add_inplace, on the GPU.
        Tensor x = gpu_->upload(test::first_rows(x_pool, rows)), delta = gpu_out({rows, hidden});
        Tensor residual = f32_on_gpu(test::first_rows(residual_pool, rows));
        gpu_->linear(x, w_out, b_out, delta);
        gpu_->add_inplace(residual, delta);
        EXPECT_TRUE(bit_equal(ours.residual, host(residual), 0, 0, rows * hidden)) << what;
        // The sums: the host's, from the updated rows.
        const int64_t groups = residual_norm_groups(hidden);
        for (int64_t r = 0; r < rows && !ours.sums.empty(); ++r)
          for (int64_t g = 0; g < groups; ++g) {
            float sum = 0.0f;
            for (int64_t c = g * 16; c < std::min(hidden, g * 16 + 16); ++c) {
              const float e = ours.residual.as<float>()[r * hidden + c];
              sum = std::fma(e, e, sum);
            }
            ASSERT_EQ(sum, ours.sums.as<float>()[r * groups + g]) << what << " row " << r << " group " << g;
          }
        // A row's bits do not depend on the row count (up to 32).
        auto same_bits = [&](const char* name, Tensor Result::*field, int64_t width) {
          if (rows <= 32) {
            EXPECT_TRUE(bit_equal(ours.*field, all.*field, 0, 0, rows * width)) << what << " " << name << " vs 32";
          }
        };
        same_bits("residual", &Result::residual, hidden);
        same_bits("normed", &Result::normed, hidden);
        same_bits("act", &Result::act, inter);
        same_bits("q", &Result::q, heads * head_dim);
        // Scaled sums against formed rows: the same math, rounded at another point.
        EXPECT_LE(rel_error(ours.act, formed.act), 1e-2) << what;
        EXPECT_LE(rel_error(ours.q, formed.q), 1e-2) << what;
        // The CPU's chain.
        Tensor ref_residual = test::first_rows(residual_pool, rows), ref_delta = Tensor::zeros({rows, hidden});
        cpu_.linear(test::first_rows(x_pool, rows), w_out_ref, b_out_ref, ref_delta);
        cpu_.add_inplace(ref_residual, ref_delta);
        Tensor ref_normed = Tensor::zeros({rows, hidden}), ref_act = Tensor::zeros({rows, inter});
        Tensor ref_scratch = Tensor::zeros({rows, 2 * inter});
        cpu_.rms_norm(ref_residual, norm_w_ref, eps, ref_normed);
        cpu_.linear_swiglu(ref_normed, gate_up_ref, ref_scratch, ref_act);
        EXPECT_LE(rel_error(ours.residual, ref_residual), 1e-2) << what;
        EXPECT_LE(rel_error(ours.normed, ref_normed), 8e-3) << what;
        EXPECT_LE(rel_error(ours.act, ref_act), 2e-2) << what;
        Tensor ref_qkv = Tensor::zeros({rows, qkv_width}), ref_q = Tensor::zeros({rows, heads, head_dim});
        Tensor ref_k = Tensor::zeros({rows, kv_heads, head_dim}), ref_v = Tensor::zeros({rows, kv_heads, head_dim});
        cpu_.linear(ref_normed, w_qkv_ref, b_qkv_ref, ref_qkv);
        cpu_.split_columns(ref_qkv, {&ref_q, &ref_k, &ref_v});
        cpu_.rope(ref_q, std::vector<int32_t>(positions.begin(), positions.begin() + rows), freqs, 1.0f);
        EXPECT_LE(rel_error(ours.q, ref_q), 2e-2) << what;
      }
    }
}

#ifdef DRIFT_WITH_CUDA
// Device argmax (greedy decoding without the logits crossing the bus) picks what the CPU
// sampler's greedy path picks: the largest logit, the lowest index among equal ones.
TEST_P(CudaOpsTest, ArgmaxMatchesTheLowestIndexOfTheMaximum) {
  auto& cuda = static_cast<CudaBackend&>(*gpu_);
  for (int64_t vocab : {1, 7, 512, 16388, 128255, 128256}) {  // scalar and 16-byte paths, partial trips
    Tensor logits = random({6, vocab});
    float* row = logits.as<float>();
    if (vocab > 7) {  // a tie in row 1 (index 5 and 700 or the last), a -inf row 2 mixed in
      const int64_t late = std::min<int64_t>(700, vocab - 1);
      row[vocab + 5] = row[vocab + late] = 100.0f;
      for (int64_t i = 0; i < vocab; ++i) row[2 * vocab + i] = i % 3 ? -INFINITY : -1.0f;
      // NaN as the host's std::max_element treats it: never picked after index 0 (row 3), always
      // picked at index 0 (row 4).
      row[3 * vocab + 3] = row[3 * vocab + late] = NAN;
      row[4 * vocab] = NAN;
      row[4 * vocab + late] = 100.0f;
    }
    std::vector<int32_t> expected;
    for (int64_t r = 0; r < 6; ++r)
      expected.push_back(static_cast<int32_t>(std::max_element(row + r * vocab, row + (r + 1) * vocab) - (row + r * vocab)));
    Tensor dev = f32_on_gpu(logits);
    EXPECT_EQ(cuda.argmax(dev), expected) << "vocab " << vocab;
  }
}
#endif

std::string storage_name(const ::testing::TestParamInfo<DType>& info) {
  return info.param == DType::F16 ? "fp16" : "bf16";
}
INSTANTIATE_TEST_SUITE_P(Storage, CudaOpsTest, ::testing::Values(DType::BF16, DType::F16), storage_name);
INSTANTIATE_TEST_SUITE_P(Storage, CudaAttentionTest, ::testing::Values(DType::BF16, DType::F16), storage_name);

}  // namespace
}  // namespace drift
