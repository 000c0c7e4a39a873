// Paged attention (CPU reference) against a naive dense implementation written here: K/V
// scattered over shuffled pages, GQA, ragged sequences, causal limits and an explicit tree mask
// (the form tree verification will use).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "kernels/cpu/paged_attention.h"

namespace drift::cpu {
namespace {

struct Seq {
  int64_t len;                    // tokens with K/V in the cache
  std::vector<int32_t> pages;
};

// out = softmax(q k^T * scale over visible positions) v, with plain loops and doubles.
std::vector<double> naive(const std::vector<float>& q, const std::vector<float>& dense_k, const std::vector<float>& dense_v,
                          int64_t heads, int64_t kv_heads, int64_t d, float scale, const std::vector<bool>& visible) {
  std::vector<double> out(heads * d, 0.0);
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t g = h / (heads / kv_heads);
    std::vector<double> s;
    double mx = -1e300;
    for (size_t p = 0; p < visible.size(); ++p) {
      double dot = 0;
      for (int64_t i = 0; i < d; ++i) dot += q[h * d + i] * dense_k[(p * kv_heads + g) * d + i];
      s.push_back(visible[p] ? dot * scale : -1e300);
      if (visible[p]) mx = std::max(mx, dot * scale);
    }
    double sum = 0;
    for (double& x : s) sum += (x = x == -1e300 ? 0.0 : std::exp(x - mx));
    for (size_t p = 0; p < visible.size(); ++p)
      for (int64_t i = 0; i < d; ++i) out[h * d + i] += s[p] / sum * dense_v[(p * kv_heads + g) * d + i];
  }
  return out;
}

TEST(PagedAttentionTest, MatchesDenseReferenceWithShuffledPagesCausalAndTreeMasks) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int64_t heads = 8, kv_heads = 2, d = 16, block = 4, num_pages = 40;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  std::vector<int32_t> free_pages(num_pages);
  std::iota(free_pages.begin(), free_pages.end(), 0);
  std::shuffle(free_pages.begin(), free_pages.end(), rng);
  std::vector<Seq> seqs = {{13, {}}, {1, {}}, {29, {}}};
  for (auto& s : seqs)
    for (int64_t p = 0; p < (s.len + block - 1) / block; ++p) s.pages.push_back(free_pages[(&s - &seqs[0]) * 10 + p]);

  std::vector<float> k_cache(num_pages * block * kv_heads * d), v_cache(k_cache.size());
  for (auto& x : k_cache) x = normal(rng);
  for (auto& x : v_cache) x = normal(rng);

  // Queries: for seq 0 every position (causal); seq 1 its only position; seq 2 a "tree" of 5
  // nodes at the tail (positions 24..28) where node i sees the prefix plus its ancestors.
  std::vector<int32_t> token_seq, kv_len, mask_start;
  std::vector<uint64_t> mask;
  for (int32_t p = 0; p < 13; ++p) { token_seq.push_back(0); kv_len.push_back(p + 1); mask_start.push_back(1 << 30); mask.push_back(0); }
  token_seq.push_back(1); kv_len.push_back(1); mask_start.push_back(1 << 30); mask.push_back(0);
  const std::vector<uint64_t> tree = {0b00001, 0b00011, 0b00101, 0b01011, 0b10101};  // parents 0,0,1,2
  for (int i = 0; i < 5; ++i) { token_seq.push_back(2); kv_len.push_back(29); mask_start.push_back(24); mask.push_back(tree[i]); }
  const int64_t tokens = static_cast<int64_t>(token_seq.size());

  std::vector<float> q(tokens * heads * d), out(q.size());
  for (auto& x : q) x = normal(rng);
  std::vector<const int32_t*> tables;
  for (auto& s : seqs) tables.push_back(s.pages.data());
  PagedAttentionArgs a;
  a.q = q.data(); a.k_cache = k_cache.data(); a.v_cache = v_cache.data(); a.out = out.data();
  a.tokens = tokens; a.num_heads = heads; a.num_kv_heads = kv_heads; a.head_dim = d; a.block_size = block;
  a.scale = scale; a.token_seq = token_seq.data(); a.block_tables = tables.data(); a.kv_len = kv_len.data();
  a.mask_start = mask_start.data(); a.mask = mask.data(); a.mask_words = 1;
  paged_attention(a);

  for (int64_t t = 0; t < tokens; ++t) {
    const Seq& s = seqs[token_seq[t]];
    std::vector<float> dk, dv;
    std::vector<bool> visible;
    for (int64_t p = 0; p < kv_len[t]; ++p) {
      const int64_t slot = s.pages[p / block] * block + p % block;
      dk.insert(dk.end(), k_cache.begin() + slot * kv_heads * d, k_cache.begin() + (slot + 1) * kv_heads * d);
      dv.insert(dv.end(), v_cache.begin() + slot * kv_heads * d, v_cache.begin() + (slot + 1) * kv_heads * d);
      visible.push_back(p < mask_start[t] || ((mask[t] >> (p - mask_start[t])) & 1));
    }
    const std::vector<float> qt(q.begin() + t * heads * d, q.begin() + (t + 1) * heads * d);
    const auto ref = naive(qt, dk, dv, heads, kv_heads, d, scale, visible);
    for (int64_t i = 0; i < heads * d; ++i) ASSERT_NEAR(out[t * heads * d + i], ref[i], 1e-5) << "token " << t;
  }
}


// Page lists per (sequence, kv head), as a partial verification view: each kv head attends to
// its own pages (in list order) plus a tree region under a mask; the query heads of a group must
// equal the dense reference over exactly their kv head's positions.
TEST(PagedAttentionTest, PageListsPerKvHeadAttendToTheirOwnPositions) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  const int64_t heads = 6, kv_heads = 3, d = 8, block = 4, num_pages = 12;
  const float scale = 0.35f;
  std::vector<float> k_cache(num_pages * block * kv_heads * d), v_cache(k_cache.size());
  for (auto& x : k_cache) x = normal(rng);
  for (auto& x : v_cache) x = normal(rng);
  // Lists for kv heads 0..2: different pages, different lengths; the last page of each list is
  // the shared tail (page 9) holding 3 tree nodes at its slots 0..2.
  const std::vector<std::vector<int32_t>> lists = {{4, 1, 9}, {7, 9}, {0, 2, 11, 9}};
  const int64_t tree_nodes = 3;
  // Query = tree node 2 (child of node 0): sees its list's full pages, node 0 and itself.
  const uint64_t node2_bits = 0b101;
  std::vector<float> q(heads * d);
  for (auto& x : q) x = normal(rng);

  std::vector<int32_t> kv_len, mask_start;
  for (const auto& list : lists) {
    const auto full = static_cast<int32_t>((list.size() - 1) * block);
    kv_len.push_back(full + static_cast<int32_t>(tree_nodes));
    mask_start.push_back(full);
  }
  std::vector<const int32_t*> tables;
  for (const auto& list : lists) tables.push_back(list.data());
  const int32_t token_seq = 0;
  std::vector<float> out(heads * d);
  PagedAttentionArgs a;
  a.q = q.data();
  a.k_cache = k_cache.data();
  a.v_cache = v_cache.data();
  a.out = out.data();
  a.tokens = 1;
  a.num_heads = heads;
  a.num_kv_heads = kv_heads;
  a.head_dim = d;
  a.block_size = block;
  a.scale = scale;
  a.token_seq = &token_seq;
  a.block_tables = tables.data();
  a.kv_len = kv_len.data();
  a.tables_per_seq = kv_heads;
  a.mask_start = mask_start.data();
  a.mask = &node2_bits;
  a.mask_words = 1;
  paged_attention(a);

  for (int64_t g = 0; g < kv_heads; ++g) {
    // Dense K/V of kv head g's positions (every kv head's slots gathered; only g's are used).
    std::vector<float> dense_k, dense_v;
    std::vector<bool> visible;
    for (int64_t pos = 0; pos < kv_len[g]; ++pos) {
      const int64_t slot = static_cast<int64_t>(lists[g][pos / block]) * block + pos % block;
      dense_k.insert(dense_k.end(), k_cache.begin() + slot * kv_heads * d, k_cache.begin() + (slot + 1) * kv_heads * d);
      dense_v.insert(dense_v.end(), v_cache.begin() + slot * kv_heads * d, v_cache.begin() + (slot + 1) * kv_heads * d);
      visible.push_back(pos < mask_start[g] || ((node2_bits >> (pos - mask_start[g])) & 1u));
    }
    const std::vector<double> ref = naive(q, dense_k, dense_v, heads, kv_heads, d, scale, visible);
    for (int64_t h = g * (heads / kv_heads); h < (g + 1) * (heads / kv_heads); ++h)
      for (int64_t i = 0; i < d; ++i) EXPECT_NEAR(out[h * d + i], ref[h * d + i], 1e-5) << "kv head " << g << " head " << h;
  }
}

}  // namespace
}  // namespace drift::cpu
