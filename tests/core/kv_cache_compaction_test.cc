// KVCacheManager::compact: speculation's commit. Kept tree slots move behind the committed
// prefix (checked on a simulated KV store driven by the manager's SlotMover), the rest of the
// tail is rewound and its emptied pages freed, and bad arguments are refused.
#include <cstdint>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/kv_cache_manager.h"

namespace drift {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr int64_t kBlock = 4;

// A KV store of one value per slot, written through the manager's slots and moved by its mover.
struct SlotStore {
  KVCacheManager kv{16, kBlock};
  std::vector<int64_t> value = std::vector<int64_t>(16 * kBlock, -1);
  int64_t moves = 0;
  SlotStore() {
    kv.set_slot_mover([this](std::span<const int64_t> src, std::span<const int64_t> dst) {
      for (size_t i = 0; i < src.size(); ++i, ++moves) value[dst[i]] = value[src[i]];
    });
  }
  void write_positions(SeqHandle seq) {  // position p holds value p
    for (int64_t p = 0; p < kv.length(seq); ++p) value[kv.slot(seq, p)] = p;
  }
  int64_t at(SeqHandle seq, int64_t pos) const { return value[kv.slot(seq, pos)]; }
};

TEST(KVCacheCompactionTest, KeptNodesMoveBehindThePrefixAndTheRestIsRewound) {
  SlotStore s;
  const SeqHandle seq = s.kv.create_sequence();
  ASSERT_TRUE(s.kv.append(seq, 6 + 9));  // prefix of 6, a tree of 9 nodes at positions 6..14
  s.write_positions(seq);
  const std::vector<int64_t> kept = {7, 10, 14};  // nodes 1, 4, 8 accepted
  s.kv.compact(seq, 6, kept);
  EXPECT_EQ(s.kv.length(seq), 9);
  for (int64_t p = 0; p < 6; ++p) EXPECT_EQ(s.at(seq, p), p) << "the prefix is untouched";
  EXPECT_EQ(s.at(seq, 6), 7);
  EXPECT_EQ(s.at(seq, 7), 10);
  EXPECT_EQ(s.at(seq, 8), 14);
  EXPECT_EQ(s.kv.block_table(seq).size(), 3u) << "the emptied tail page is released";
  EXPECT_EQ(s.kv.num_free_pages(), 13);
  s.kv.check_integrity();
}

TEST(KVCacheCompactionTest, AnAcceptedChainPrefixMovesNothing) {
  SlotStore s;
  const SeqHandle seq = s.kv.create_sequence();
  ASSERT_TRUE(s.kv.append(seq, 3 + 5));
  s.write_positions(seq);
  const std::vector<int64_t> kept = {3, 4};
  s.kv.compact(seq, 3, kept);
  EXPECT_EQ(s.moves, 0);
  EXPECT_EQ(s.kv.length(seq), 5);
  s.kv.compact(seq, 5, {});  // nothing accepted and nothing left: a no-op
  EXPECT_EQ(s.kv.length(seq), 5);
  s.kv.check_integrity();
}

TEST(KVCacheCompactionTest, RejectsPositionsThatDoNotAscendOrLieOutsideTheTail) {
  SlotStore s;
  const SeqHandle seq = s.kv.create_sequence();
  ASSERT_TRUE(s.kv.append(seq, 10));
  const std::vector<int64_t> descending = {8, 7}, before_first = {4}, past_end = {10}, too_many = {6, 7, 8, 9, 10};
  auto fails = [&](const std::vector<int64_t>& kept, const char* needle) {
    EXPECT_THAT([&] { s.kv.compact(seq, 6, kept); }, ThrowsMessage<DriftError>(HasSubstr(needle)));
  };
  fails(descending, "must ascend");
  fails(before_first, "must ascend");
  fails(past_end, "must ascend");
  fails(too_many, "cannot keep 5 positions");
  EXPECT_EQ(s.kv.length(seq), 10) << "a refused compaction changes nothing";
  s.kv.check_integrity();
}

}  // namespace
}  // namespace drift
