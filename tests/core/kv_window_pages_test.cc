// The sliding-window page group (core/kv_window_pages.h) on its own and mirrored by the
// KVCacheManager: blocks allocated when first written, released once the window has passed them,
// shared and copied on write like the main pool's, and the integrity check over both groups.
#include "core/kv_window_pages.h"

#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/kv_cache_manager.h"
#include "support/drift_error_matchers.h"

namespace drift {
namespace {

using ::testing::ElementsAre;

constexpr int64_t kBlock = 4;
constexpr int64_t kWindow = 6;  // a query at q reads [q - 5, q]

// A sequence of the manager, written position by position as forwards would: `upto` tokens, in
// chunks of `chunk`, with the window released after each as the engine does.
void write(KVCacheManager& kv, SeqHandle seq, int64_t from, int64_t upto, int64_t chunk) {
  for (int64_t start = from; start < upto; start += chunk) {
    const int64_t end = std::min(upto, start + chunk);
    ASSERT_TRUE(kv.append(seq, end - kv.length(seq)));
    kv.window_pages()->prepare_write(seq, start, end);
    kv.window_pages()->release_passed(seq, end);
    kv.check_integrity();
  }
}

KVCacheManager manager_with_window(int64_t main_pages = 64, int64_t window_pages = 16) {
  KVCacheManager kv(main_pages, kBlock);
  kv.enable_window_pages(window_pages, kWindow);
  return kv;
}

TEST(WindowPagesTest, BlocksAreAllocatedWhenWrittenNotWhenAppended) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle seq = kv.create_sequence();
  ASSERT_TRUE(kv.append(seq, 40));  // the main pool reserves a whole prompt at admission
  EXPECT_EQ(kv.num_free_pages(), 64 - 10);
  EXPECT_EQ(kv.window_pages()->pages_held(seq), 0);
  kv.window_pages()->prepare_write(seq, 0, 8);
  EXPECT_EQ(kv.window_pages()->pages_held(seq), 2);
  EXPECT_THAT(kv.window_pages()->block_table(seq), ElementsAre(0, 1));
  kv.check_integrity();
}

// After each step a sequence holds [computed - window + 1 - block, computed): what its next
// queries read, and one block of slack. Released entries read -1 and have no slot.
TEST(WindowPagesTest, PassedBlocksAreReleasedAndTheirSlotsAreGone) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle seq = kv.create_sequence();
  write(kv, seq, 0, 30, 5);
  // computed 30: keep from 30 - 6 + 1 - 4 = 21, i.e. blocks 5 (20..23) onwards.
  const std::vector<PageId>& table = kv.window_pages()->block_table(seq);
  ASSERT_EQ(table.size(), 8u);
  for (int b = 0; b < 5; ++b) EXPECT_EQ(table[b], -1) << b;
  for (int b = 5; b < 8; ++b) EXPECT_GE(table[b], 0) << b;
  EXPECT_EQ(kv.window_pages()->pages_held(seq), 3);
  EXPECT_EQ(kv.window_pages()->num_free_pages(), 16 - 3);
  EXPECT_DRIFT_ERROR(kv.window_pages()->slot(seq, 19), "no sliding-window page for position 19");
  EXPECT_EQ(kv.window_pages()->slot(seq, 25), table[6] * kBlock + 1);
  // The main pool keeps everything.
  EXPECT_EQ(kv.block_table(seq).size(), 8u);
}

TEST(WindowPagesTest, AWriteWhoseWindowIsGoneIsAnError) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle seq = kv.create_sequence();
  write(kv, seq, 0, 30, 5);
  kv.rewind(seq, 10);  // deeper than any step's own tail: the window of position 20 is gone
  EXPECT_DRIFT_ERROR(kv.window_pages()->prepare_write(seq, 20, 21), "sliding-window KV of positions [12, 16)");
}

// Rewinding a step's tail and compacting a verified tree move and release window blocks too.
TEST(WindowPagesTest, RewindAndCompactAreMirrored) {
  KVCacheManager kv = manager_with_window();
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> moves;
  kv.window_pages()->set_slot_mover([&](std::span<const int64_t> src, std::span<const int64_t> dst) {
    moves.emplace_back(std::vector<int64_t>(src.begin(), src.end()), std::vector<int64_t>(dst.begin(), dst.end()));
  });
  const SeqHandle seq = kv.create_sequence();
  write(kv, seq, 0, 10, 10);
  ASSERT_TRUE(kv.append(seq, 6));  // a root at 10 and five draft nodes at 11..15
  kv.window_pages()->prepare_write(seq, 10, 16);
  const int64_t node_13 = kv.window_pages()->slot(seq, 13), node_15 = kv.window_pages()->slot(seq, 15);
  const int64_t to_11 = kv.window_pages()->slot(seq, 11), to_12 = kv.window_pages()->slot(seq, 12);
  const std::vector<int64_t> kept = {13, 15};
  kv.compact(seq, 11, kept);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_THAT(moves[0].first, ElementsAre(node_13, node_15));
  EXPECT_THAT(moves[0].second, ElementsAre(to_11, to_12));
  EXPECT_EQ(kv.length(seq), 13);
  EXPECT_EQ(kv.window_pages()->block_table(seq).size(), 4u);  // block 3 (12..15) still holds 12
  kv.rewind(seq, 1);
  EXPECT_EQ(kv.window_pages()->block_table(seq).size(), 3u);
  kv.check_integrity();
}

TEST(WindowPagesTest, ForkSharesAndAWriteCopiesTheSharedBlock) {
  KVCacheManager kv = manager_with_window();
  std::vector<std::pair<PageId, PageId>> copies;
  kv.window_pages()->set_page_copier([&](PageId src, PageId dst) { copies.emplace_back(src, dst); });
  const SeqHandle a = kv.create_sequence();
  write(kv, a, 0, 10, 10);
  const SeqHandle b = kv.fork(a);
  EXPECT_EQ(kv.window_pages()->block_table(b), kv.window_pages()->block_table(a));
  const int64_t free_before = kv.window_pages()->num_free_pages();
  ASSERT_TRUE(kv.append(b, 1));
  kv.window_pages()->prepare_write(b, 10, 11);  // block 2 (8..11) is shared: copied first
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].first, kv.window_pages()->block_table(a)[2]);
  EXPECT_EQ(copies[0].second, kv.window_pages()->block_table(b)[2]);
  EXPECT_EQ(kv.window_pages()->num_free_pages(), free_before - 1);
  kv.check_integrity();
  kv.free(a);
  kv.free(b);
  EXPECT_EQ(kv.window_pages()->num_free_pages(), 16);
  kv.check_integrity();
}

// A parallel sample shares its sibling's prompt pages and the window's blocks at the prompt's
// end; once the sibling has moved past that window, nothing is shared.
TEST(WindowPagesTest, SharePrefixNeedsTheSiblingsWindowStillHeld) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle holder = kv.create_sequence();
  write(kv, holder, 0, 21, 7);
  const SeqHandle sample = kv.create_sequence();
  ASSERT_TRUE(kv.share_prefix(sample, holder, 5));  // 20 tokens: blocks 3 and 4 (15..19) needed
  EXPECT_EQ(kv.length(sample), 20);
  const std::vector<PageId>& table = kv.window_pages()->block_table(sample);
  ASSERT_EQ(table.size(), 5u);
  EXPECT_EQ(table[2], -1);
  EXPECT_EQ(table[3], kv.window_pages()->block_table(holder)[3]);
  EXPECT_EQ(table[4], kv.window_pages()->block_table(holder)[4]);
  kv.check_integrity();
  write(kv, holder, 21, 40, 7);  // the holder moves on; its blocks 3 and 4 are released
  const SeqHandle late = kv.create_sequence();
  EXPECT_FALSE(kv.share_prefix(late, holder, 5));
  EXPECT_EQ(kv.length(late), 0);
  EXPECT_EQ(kv.ref_count(kv.block_table(holder)[0]), 2);  // the first sample's reference only
  kv.check_integrity();
}

// A parallel sample's prompt end is pinned: the holder keeps it however far it runs, so a
// sibling admitted late still shares the prompt.
TEST(WindowPagesTest, APinnedPromptEndOutlivesTheWindow) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle holder = kv.create_sequence();
  kv.window_pages()->pin_prefix_end(holder, 20);
  write(kv, holder, 0, 40, 7);
  const std::vector<PageId>& table = kv.window_pages()->block_table(holder);
  EXPECT_EQ(table[2], -1);
  EXPECT_GE(table[3], 0);  // 15..19 pinned
  EXPECT_GE(table[4], 0);
  EXPECT_EQ(table[5], -1);
  const SeqHandle late = kv.create_sequence();
  EXPECT_TRUE(kv.share_prefix(late, holder, 5));
  kv.check_integrity();
}

// A cached page keeps its window block while retained: a prefix whose last window blocks were
// kept is adopted with them; one whose window blocks had been released first is cut back to
// where they were kept.
TEST(WindowPagesTest, AdoptedPrefixesEndWhereWindowBlocksWereKept) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle seq = kv.create_sequence();
  write(kv, seq, 0, 12, 12);  // blocks 0..2, all still held
  std::vector<PageId> cached(kv.block_table(seq).begin(), kv.block_table(seq).begin() + 3);
  std::vector<PageId> window_blocks;
  for (int64_t b = 0; b < 3; ++b) {
    kv.retain_page(cached[b]);
    kv.keep_window_of(cached[b], seq, b);
    window_blocks.push_back(kv.window_pages()->block_table(seq)[b]);
  }
  write(kv, seq, 12, 40, 7);         // the sequence moves on; its own window entries for 0..4 are released
  for (int64_t b = 3; b < 5; ++b) {  // too late: their window blocks are gone
    cached.push_back(kv.block_table(seq)[b]);
    kv.retain_page(cached[b]);
    kv.keep_window_of(cached[b], seq, b);
  }
  kv.check_integrity();
  // Five cached pages, but a prefix must end where its window (positions from 20 - 5 on, blocks
  // 3 and 4) was kept: only three pages qualify (blocks 1 and 2 kept).
  const SeqHandle hit = kv.create_sequence();
  EXPECT_EQ(kv.adopt_pages(hit, cached), 3);
  EXPECT_EQ(kv.length(hit), 12);
  EXPECT_THAT(kv.window_pages()->block_table(hit), ElementsAre(-1, window_blocks[1], window_blocks[2]));
  kv.check_integrity();
  // Released pages take their window blocks with them.
  kv.free(hit);
  const int64_t free_before = kv.window_pages()->num_free_pages();
  for (PageId page : cached) kv.release_page(page);
  EXPECT_EQ(kv.window_pages()->num_free_pages(), free_before + 3);
  kv.check_integrity();
}

// However a prompt was chunked, its last full page's window is still held when its pages are
// offered: here the last chunk is the prompt's last token alone, and a later identical prompt
// still adopts all five full pages.
TEST(WindowPagesTest, AChunkedPromptsLastFullPageKeepsItsWindow) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle seq = kv.create_sequence();
  write(kv, seq, 0, 22, 22);
  write(kv, seq, 22, 23, 1);
  const std::vector<PageId> cached(kv.block_table(seq).begin(), kv.block_table(seq).begin() + 5);
  for (int64_t b = 0; b < 5; ++b) {
    kv.retain_page(cached[b]);
    kv.keep_window_of(cached[b], seq, b);
  }
  const SeqHandle again = kv.create_sequence();
  EXPECT_EQ(kv.adopt_pages(again, cached), 5);  // the window of position 20: blocks 3 and 4
  kv.check_integrity();
}

// Kept window blocks are the first to go when the window group runs short: the pool's bound
// holds for sequences, and cached prefixes lose only their window, oldest first.
TEST(WindowPagesTest, KeptWindowBlocksAreDroppedOldestFirstUnderPressure) {
  KVCacheManager kv = manager_with_window(64, 6);
  const SeqHandle first = kv.create_sequence();
  write(kv, first, 0, 12, 12);
  const std::vector<PageId> cached(kv.block_table(first).begin(), kv.block_table(first).end());
  for (int64_t b = 0; b < 3; ++b) {
    kv.retain_page(cached[b]);
    kv.keep_window_of(cached[b], first, b);
  }
  kv.free(first);
  EXPECT_EQ(kv.window_pages()->num_free_pages(), 3);  // three blocks kept for the cache
  const SeqHandle second = kv.create_sequence();
  write(kv, second, 0, 16, 16);                       // four blocks at once: the oldest kept block (block 0) goes
  EXPECT_EQ(kv.window_pages()->num_free_pages(), 1);  // and the step released its block 0
  kv.check_integrity();
  kv.free(second);
  const SeqHandle hit = kv.create_sequence();
  EXPECT_EQ(kv.adopt_pages(hit, cached), 3);  // blocks 1 and 2 still kept: the window of 12
  kv.check_integrity();
}

// Many sequences in steps as the engine runs them, at the limits the pool is sized for: it never
// runs short, and each sequence holds only its window (and slack) between steps.
TEST(WindowPagesTest, APoolSizedByTheLimitsNeverRunsShort) {
  constexpr int64_t kSequences = 5, kStepTokens = 24;
  const int64_t pages = WindowPages::pages_to_never_run_short(kWindow, kBlock, kSequences, kStepTokens);
  KVCacheManager kv = manager_with_window(1024, pages);
  std::vector<SeqHandle> seqs;
  std::vector<int64_t> computed(kSequences, 0);
  for (int64_t i = 0; i < kSequences; ++i) seqs.push_back(kv.create_sequence());
  for (int step = 0; step < 60; ++step) {
    int64_t budget = kStepTokens;
    for (int64_t i = 0; i < kSequences; ++i) {
      // Uneven chunks, starting mid-block: the worst case for block counts.
      const int64_t n = std::min<int64_t>(budget, 1 + (step * 7 + i * 3) % 9);
      if (n <= 0) continue;
      budget -= n;
      ASSERT_TRUE(kv.append(seqs[i], computed[i] + n - kv.length(seqs[i])));
      kv.window_pages()->prepare_write(seqs[i], computed[i], computed[i] + n);
      computed[i] += n;
    }
    for (int64_t i = 0; i < kSequences; ++i) {
      kv.window_pages()->release_passed(seqs[i], computed[i]);
      // window - 1 + block positions, possibly starting mid-block.
      EXPECT_LE(kv.window_pages()->pages_held(seqs[i]), (kWindow - 1 + kBlock + kBlock - 1) / kBlock + 1);
    }
    kv.check_integrity();
  }
}

TEST(WindowPagesTest, IntegrityCatchesATableLongerThanItsSequence) {
  KVCacheManager kv = manager_with_window();
  const SeqHandle seq = kv.create_sequence();
  ASSERT_TRUE(kv.append(seq, 4));
  kv.window_pages()->prepare_write(seq, 0, 4);
  kv.check_integrity();
  // Written past the main pool's length: a table the sequence's length does not cover.
  kv.window_pages()->prepare_write(seq, 4, 8);
  EXPECT_DRIFT_ERROR(kv.check_integrity(), "holds 2 sliding-window blocks, its length 4 needs at most 1");
}

TEST(WindowPagesTest, BadGeometryIsRefused) {
  EXPECT_DRIFT_ERROR(WindowPages(0, 4, 6), "num_pages");
  EXPECT_DRIFT_ERROR(WindowPages(4, 4, 0), "window must be positive");
  KVCacheManager kv(8, 4);
  (void)kv.create_sequence();
  EXPECT_DRIFT_ERROR(kv.enable_window_pages(4, 6), "before any sequence");
}

}  // namespace
}  // namespace drift
