// The eagle3 plugin's draft KV in pages (draft_cache.h), through a real host table on the CPU
// (core's PluginContext, host memory): sequences take pages as they grow and give them back when
// they go; a reservation the pool cannot meet takes nothing; rows written across page boundaries
// land in their pages' slots; the attention arguments name exactly the sequence's pages.
#include <gtest/gtest.h>

#include <numeric>

#include "core/plugin/host_services.h"
#include "draft_cache.h"

namespace eagle3 {
namespace {

constexpr int64_t kPages = 3, kBlock = 4, kKvHeads = 2, kHeadDim = 2, kRow = kKvHeads * kHeadDim;

struct CpuHost {
  drift::HostState state;
  drift::PluginContext context{"eagle3", "", &state};
  CpuHost() {
    state.model_info.struct_size = sizeof(state.model_info);
    state.model_info.activation_dtype = DRIFT_DTYPE_F32;
    state.model_info.device = DRIFT_DEVICE_CPU;
  }
};

drift_tensor_t host_rows(std::vector<float>& values) {
  drift_tensor_t t{};
  t.data = values.data();
  t.dtype = DRIFT_DTYPE_F32;
  t.device = DRIFT_DEVICE_CPU;
  t.ndim = 3;
  t.shape[0] = static_cast<int64_t>(values.size()) / kRow;
  t.shape[1] = kKvHeads;
  t.shape[2] = kHeadDim;
  t.strides[0] = kRow;
  t.strides[1] = kHeadDim;
  t.strides[2] = 1;
  return t;
}

TEST(Eagle3DraftCache, SequencesTakePagesAsTheyGrowAndGiveThemBack) {
  CpuHost cpu;
  const Host host(cpu.context.api());
  DraftKvPool pool(host, kPages, kBlock, kKvHeads, kHeadDim);
  {
    DraftCache a(pool);
    ASSERT_TRUE(a.reserve(5));  // two pages
    EXPECT_EQ(pool.free_pages(), 1);
    a.commit(5);
    ASSERT_TRUE(a.reserve(3));  // rows 5..7: still the second page
    EXPECT_EQ(pool.free_pages(), 1);
    DraftCache b(pool);
    EXPECT_FALSE(b.reserve(5));  // two pages wanted, one free: nothing taken
    EXPECT_EQ(pool.free_pages(), 1);
    ASSERT_TRUE(b.reserve(4));
    EXPECT_EQ(pool.free_pages(), 0);
    EXPECT_FALSE(a.reserve(4));  // a third page for a
    a.restart(100);              // a starts over at another position, keeping its pages
    EXPECT_EQ(a.length(), 0);
    EXPECT_EQ(a.end_position(), 100);
    EXPECT_TRUE(a.reserve(8));
  }
  EXPECT_EQ(pool.free_pages(), kPages);  // both gave theirs back
}

TEST(Eagle3DraftCache, RowsLandInTheirPagesSlotsAndAttentionNamesThePages) {
  CpuHost cpu;
  const Host host(cpu.context.api());
  DraftKvPool pool(host, kPages, kBlock, kKvHeads, kHeadDim);
  DraftCache other(pool);
  ASSERT_TRUE(other.reserve(1));  // page 0: the cache below gets pages 1 and 2
  DraftCache cache(pool);
  ASSERT_TRUE(cache.reserve(7));
  std::vector<float> k(5 * kRow), v(5 * kRow);
  std::iota(k.begin(), k.end(), 1.0f);
  std::iota(v.begin(), v.end(), -100.0f);
  cache.write(2, host_rows(k), host_rows(v));  // rows 2..6: page 1 slots 2-3, page 2 slots 0-2
  const auto* keys = static_cast<const float*>(pool.keys().data);
  const auto* values = static_cast<const float*>(pool.values().data);
  for (int64_t row = 2; row < 7; ++row) {
    const int64_t page = row < kBlock ? 1 : 2, slot = page * kBlock + row % kBlock;
    for (int64_t e = 0; e < kRow; ++e) {
      EXPECT_EQ(keys[slot * kRow + e], k[(row - 2) * kRow + e]) << "row " << row;
      EXPECT_EQ(values[slot * kRow + e], v[(row - 2) * kRow + e]) << "row " << row;
    }
  }
  drift_attention_args_t args{};
  cache.attend_over(7, args);
  EXPECT_EQ(args.k, &pool.keys());
  EXPECT_EQ(args.v, &pool.values());
  ASSERT_EQ(args.num_kv_pages, 2);
  EXPECT_EQ(args.kv_pages[0], 1);
  EXPECT_EQ(args.kv_pages[1], 2);
  EXPECT_EQ(args.kv_block_size, kBlock);
  EXPECT_EQ(args.kv_len, 7);
}

// Rows over pages that are not neighbours in the pool (another sequence took the one between):
// each run of rows lands in its own page.
TEST(Eagle3DraftCache, RowsSplitWhereTheSequencesPagesAreNotNeighbours) {
  CpuHost cpu;
  const Host host(cpu.context.api());
  DraftKvPool pool(host, 4, kBlock, kKvHeads, kHeadDim);
  DraftCache cache(pool), other(pool);
  ASSERT_TRUE(cache.reserve(kBlock));      // page 0
  ASSERT_TRUE(other.reserve(1));           // page 1
  ASSERT_TRUE(cache.reserve(2 * kBlock));  // page 2
  std::vector<float> k(2 * kBlock * kRow), v(2 * kBlock * kRow);
  std::iota(k.begin(), k.end(), 1.0f);
  std::iota(v.begin(), v.end(), -1000.0f);
  cache.write(0, host_rows(k), host_rows(v));
  const auto* keys = static_cast<const float*>(pool.keys().data);
  const auto* values = static_cast<const float*>(pool.values().data);
  for (int64_t row = 0; row < 2 * kBlock; ++row) {
    const int64_t slot = (row < kBlock ? 0 : 2) * kBlock + row % kBlock;
    for (int64_t e = 0; e < kRow; ++e) {
      EXPECT_EQ(keys[slot * kRow + e], k[row * kRow + e]) << "row " << row;
      EXPECT_EQ(values[slot * kRow + e], v[row * kRow + e]) << "row " << row;
    }
  }
  for (int64_t e = 0; e < kBlock * kRow; ++e) EXPECT_EQ(keys[kBlock * kRow + e], 0.0f) << "page 1 is the other's";
}

}  // namespace
}  // namespace eagle3
