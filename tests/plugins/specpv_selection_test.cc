// SpecPV's selection logic alone (plugins/specpv/selection.cc) against a brute-force reading of
// its definition: a partial view of tail block T attends to block b < T iff b is a sink block,
// a retrieved block, or lies at or after the window's first block; the window holds the
// n_window_blocks blocks before the buffer; no block between the candidates and the window is
// left out; full verification is chosen below the threshold, when the buffer is past its bound
// or the partial-step cap is reached.
#include <algorithm>
#include <random>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "selection.h"

namespace specpv {
namespace {

using ::testing::HasSubstr;

TEST(SpecPVSelection, ViewsMatchBruteForceOverRandomStates) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    Settings s;
    s.block_size = 1 + static_cast<int64_t>(rng() % 32);
    s.n_sink_blocks = rng() % 5;
    s.n_retrieval_blocks = rng() % 12;
    s.n_window_blocks = rng() % 6;
    const int64_t committed = static_cast<int64_t>(rng() % 2000);
    const Bounds b = refresh_bounds(s, committed);
    // The bounds' own definition.
    ASSERT_EQ(b.buffer_block, committed / s.block_size);
    ASSERT_EQ(b.sink_end, std::min(s.n_sink_blocks, b.buffer_block));
    ASSERT_EQ(b.buffer_block - b.window_block, std::min(s.n_window_blocks, b.buffer_block - b.sink_end));
    Retrieval r;
    r.committed = committed;
    r.window_block = b.window_block;
    r.buffer_block = b.buffer_block;
    const int64_t lists = 1 + rng() % 4;
    const int64_t k = std::min(s.n_retrieval_blocks, b.candidates());
    std::vector<int32_t> topk;  // what top_k would return: k distinct candidate indices per list, any order
    for (int64_t l = 0; l < lists; ++l) {
      std::vector<int32_t> all(static_cast<size_t>(b.candidates()));
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
      std::shuffle(all.begin(), all.end(), rng);
      topk.insert(topk.end(), all.begin(), all.begin() + k);
    }
    r.retrieved = retrieved_blocks(topk, lists, k, b.sink_end);
    const int64_t tail = b.buffer_block + static_cast<int64_t>(rng() % 5);
    for (int64_t l = 0; l < lists; ++l) {
      const std::set<int32_t> picked(topk.begin() + l * k, topk.begin() + (l + 1) * k);
      std::vector<int64_t> expected;
      for (int64_t blk = 0; blk < tail; ++blk) {
        const bool sink = blk < b.sink_end;
        const bool retrieved =
            blk >= b.sink_end && blk < b.window_block && picked.count(static_cast<int32_t>(blk - b.sink_end));
        const bool recent = blk >= b.window_block;  // window, then buffer: contiguous up to the tail
        if (sink || retrieved || recent) expected.push_back(blk);
      }
      ASSERT_EQ(view_blocks(s, r, l, tail), expected) << "trial " << trial << " list " << l;
      // Every block from the last candidate to the tail is seen: no gap before the window.
      ASSERT_EQ(expected.size(), static_cast<size_t>(b.sink_end + k + (tail - b.window_block)));
    }
  }
}

TEST(SpecPVSelection, ChoosesFullBelowTheThresholdAndRefreshesOnBufferOrCap) {
  Settings s;
  s.partial_threshold = 100;
  s.n_spec_tokens_buf = 20;
  s.full_refresh_interval = 3;
  Retrieval r;
  r.committed = 500;
  EXPECT_EQ(choose(s, &r, 99, 0), Verify::Full);
  EXPECT_EQ(choose(s, nullptr, 100, 0), Verify::Refresh);  // no retrieval yet
  EXPECT_EQ(choose(s, &r, 500, 0), Verify::Partial);
  EXPECT_EQ(choose(s, &r, 520, 2), Verify::Partial);  // 20 tokens since: still in the buffer
  EXPECT_EQ(choose(s, &r, 521, 0), Verify::Refresh);  // the buffer's bound passed
  EXPECT_EQ(choose(s, &r, 505, 3), Verify::Refresh);  // the partial-step cap
}

TEST(SpecPVSelection, BrokenStatesAreErrorsNotViews) {
  Settings s;
  Retrieval r;
  r.committed = 160;
  r.window_block = 2;
  r.buffer_block = 10;
  r.retrieved = {{1}};  // a sink block cannot be retrieved
  EXPECT_THROW(view_blocks(s, r, 0, 10), std::logic_error);
  r.retrieved = {{5}};
  EXPECT_THROW(view_blocks(s, r, 0, 9), std::logic_error);   // a tail before the buffer: rewound below the refresh
  EXPECT_THROW(view_blocks(s, r, 1, 10), std::logic_error);  // no such list
  EXPECT_THROW(retrieved_blocks({0, 1, 2}, 2, 2, 0), std::logic_error);
}

TEST(SpecPVSettings, DefaultsAreTheSeedsAndBadValuesNameTheKey) {
  const Settings d = read_settings("");
  EXPECT_EQ(d.block_size, 16);
  EXPECT_EQ(d.n_sink_blocks, 2);
  EXPECT_EQ(d.n_retrieval_blocks, 256);
  EXPECT_EQ(d.n_window_blocks, 8);
  EXPECT_EQ(d.n_spec_tokens_buf, 20);
  EXPECT_EQ(d.partial_threshold, 4096);
  EXPECT_EQ(d.full_refresh_interval, 32);
  auto error = [](const std::string& toml) {
    try {
      read_settings(toml);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(error("full_refresh_interval = 0"),
              HasSubstr("setting 'full_refresh_interval' = 0 must be an integer in 1.."));
  EXPECT_THAT(error("n_window_blocks = -1"), HasSubstr("'n_window_blocks' = -1"));
  EXPECT_THAT(error("n_sink_blocks = 2.5"), HasSubstr("'n_sink_blocks' = 2.5"));
  EXPECT_THAT(error("window = 3"), HasSubstr("setting 'window' is unknown"));
  EXPECT_THAT(error("block_size = "), HasSubstr("settings do not parse"));
}

}  // namespace
}  // namespace specpv
