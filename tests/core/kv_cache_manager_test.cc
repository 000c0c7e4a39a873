#include "core/kv_cache_manager.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "support/drift_error_matchers.h"

namespace drift {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Records every (src, dst) the manager asks to copy.
struct CopyLog {
  std::vector<std::pair<PageId, PageId>> calls;
  KVCacheManager::PageCopier copier() {
    return [this](PageId src, PageId dst) { calls.emplace_back(src, dst); };
  }
};

// ---------------------------------------------------------------------------------------------
// Construction and geometry

TEST(KVCacheManagerTest, ReportsGeometryAndStartsWithEveryPageFree) {
  KVCacheManager kv(8, 16);
  EXPECT_EQ(kv.num_pages(), 8);
  EXPECT_EQ(kv.block_size(), 16);
  EXPECT_EQ(kv.num_free_pages(), 8);
  EXPECT_EQ(kv.num_sequences(), 0);
  for (PageId p = 0; p < 8; ++p) EXPECT_EQ(kv.ref_count(p), 0);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, RejectsBadGeometry) {
  EXPECT_DRIFT_ERROR(KVCacheManager(0, 4), "num_pages");
  EXPECT_DRIFT_ERROR(KVCacheManager(-3, 4), "num_pages");
  EXPECT_DRIFT_ERROR(KVCacheManager(int64_t{1} << 40, 4), "num_pages");
  EXPECT_DRIFT_ERROR(KVCacheManager(4, 0), "block_size");
  EXPECT_DRIFT_ERROR(KVCacheManager(4, -1), "block_size");
  EXPECT_DRIFT_ERROR(KVCacheManager(1 << 30, std::numeric_limits<int64_t>::max() / 4),
                     "overflow");
}

TEST(KVCacheManagerTest, PagesForTokensRoundsUp) {
  KVCacheManager kv(4, 4);
  EXPECT_EQ(kv.pages_for_tokens(0), 0);
  EXPECT_EQ(kv.pages_for_tokens(1), 1);
  EXPECT_EQ(kv.pages_for_tokens(4), 1);
  EXPECT_EQ(kv.pages_for_tokens(5), 2);
  EXPECT_EQ(kv.pages_for_tokens(std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max() / 4 + 1);
  EXPECT_DRIFT_ERROR(kv.pages_for_tokens(-1), "negative token count -1");
}

// ---------------------------------------------------------------------------------------------
// Sequences, append, slot

TEST(KVCacheManagerTest, CreateSequenceGivesDistinctEmptySequences) {
  KVCacheManager kv(4, 4);
  SeqHandle a = kv.create_sequence();
  SeqHandle b = kv.create_sequence();
  EXPECT_NE(a, b);
  EXPECT_TRUE(kv.has_sequence(a));
  EXPECT_TRUE(kv.has_sequence(b));
  EXPECT_EQ(kv.num_sequences(), 2);
  EXPECT_EQ(kv.length(a), 0);
  EXPECT_TRUE(kv.block_table(a).empty());
  EXPECT_EQ(kv.num_free_pages(), 4);
}

TEST(KVCacheManagerTest, AppendTakesLowestIdsFromFreshPool) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 9));
  EXPECT_EQ(kv.length(s), 9);
  EXPECT_THAT(kv.block_table(s), ElementsAre(0, 1, 2));
  EXPECT_EQ(kv.num_free_pages(), 5);
  for (PageId p : {0, 1, 2}) EXPECT_EQ(kv.ref_count(p), 1);
}

TEST(KVCacheManagerTest, AppendReusesMostRecentlyFreedPageFirst) {
  KVCacheManager kv(8, 4);
  SeqHandle a = kv.create_sequence();
  SeqHandle b = kv.create_sequence();
  ASSERT_TRUE(kv.append(a, 8));  // pages 0, 1
  ASSERT_TRUE(kv.append(b, 4));  // page 2
  kv.free(a);
  SeqHandle c = kv.create_sequence();
  ASSERT_TRUE(kv.append(c, 12));
  // a's pages come back in their old order, then the untouched pool continues at 3.
  EXPECT_THAT(kv.block_table(c), ElementsAre(0, 1, 3));
}

TEST(KVCacheManagerTest, AppendFillsPartialLastPageBeforeAllocating) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 1));
  ASSERT_TRUE(kv.append(s, 3));
  EXPECT_THAT(kv.block_table(s), ElementsAre(0));
  ASSERT_TRUE(kv.append(s, 1));
  EXPECT_THAT(kv.block_table(s), ElementsAre(0, 1));
  EXPECT_EQ(kv.length(s), 5);
}

TEST(KVCacheManagerTest, AppendIsAllOrNothingWhenPoolTooSmall) {
  KVCacheManager kv(3, 4);
  SeqHandle a = kv.create_sequence();
  SeqHandle b = kv.create_sequence();
  ASSERT_TRUE(kv.append(a, 6));
  EXPECT_EQ(kv.pages_needed_to_append(b, 5), 2);
  EXPECT_FALSE(kv.append(b, 5));  // needs 2 pages, 1 free
  EXPECT_EQ(kv.length(b), 0);
  EXPECT_TRUE(kv.block_table(b).empty());
  EXPECT_EQ(kv.num_free_pages(), 1);
  EXPECT_FALSE(kv.append(a, std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(kv.length(a), 6);
  EXPECT_TRUE(kv.append(b, 4));  // exactly the last page
  EXPECT_EQ(kv.num_free_pages(), 0);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, AppendAndPagesNeededRejectNegativeCounts) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  EXPECT_DRIFT_ERROR(kv.append(s, -1), "negative count -1 for sequence");
  EXPECT_DRIFT_ERROR(kv.pages_needed_to_append(s, -2), "negative count -2 for sequence");
}

TEST(KVCacheManagerTest, PagesNeededToAppendIsExact) {
  KVCacheManager kv(16, 4);
  SeqHandle s = kv.create_sequence();
  EXPECT_EQ(kv.pages_needed_to_append(s, 0), 0);
  EXPECT_EQ(kv.pages_needed_to_append(s, 1), 1);
  EXPECT_EQ(kv.pages_needed_to_append(s, 4), 1);
  EXPECT_EQ(kv.pages_needed_to_append(s, 5), 2);
  ASSERT_TRUE(kv.append(s, 6));  // last page half full
  EXPECT_EQ(kv.pages_needed_to_append(s, 2), 0);
  EXPECT_EQ(kv.pages_needed_to_append(s, 3), 1);
  SeqHandle f = kv.fork(s);  // now the half-full last page is shared: one extra page for COW
  EXPECT_EQ(kv.pages_needed_to_append(s, 0), 0);
  EXPECT_EQ(kv.pages_needed_to_append(s, 1), 1);
  EXPECT_EQ(kv.pages_needed_to_append(f, 2), 1);
  EXPECT_EQ(kv.pages_needed_to_append(f, 3), 2);
  ASSERT_TRUE(kv.append(f, 2));  // f's last page now private and full
  EXPECT_EQ(kv.pages_needed_to_append(f, 1), 1);
  ASSERT_TRUE(kv.append(s, 2));  // s alone holds the old page now: no copy
  EXPECT_EQ(kv.pages_needed_to_append(s, 1), 1);
  // A full shared last page is never written by an append: no copy is needed.
  SeqHandle g = kv.fork(s);
  EXPECT_EQ(kv.pages_needed_to_append(g, 1), 1);
}

TEST(KVCacheManagerTest, PagesNeededMatchesWhatAppendTakes) {
  KVCacheManager kv(64, 4);
  SeqHandle s = kv.create_sequence();
  for (int64_t n : {1, 3, 0, 5, 2, 8, 7}) {
    SeqHandle f = kv.fork(s);
    for (SeqHandle h : {f, s}) {
      int64_t need = kv.pages_needed_to_append(h, n);
      int64_t before = kv.num_free_pages();
      ASSERT_TRUE(kv.append(h, n));
      EXPECT_EQ(before - kv.num_free_pages(), need) << "append " << n;
    }
    kv.free(f);
  }
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, SlotMapsPositionThroughBlockTable) {
  KVCacheManager kv(8, 4);
  SeqHandle a = kv.create_sequence();
  SeqHandle b = kv.create_sequence();
  ASSERT_TRUE(kv.append(a, 4));  // page 0
  ASSERT_TRUE(kv.append(b, 4));  // page 1
  ASSERT_TRUE(kv.append(a, 2));  // page 2
  EXPECT_EQ(kv.slot(a, 0), 0);
  EXPECT_EQ(kv.slot(a, 3), 3);
  EXPECT_EQ(kv.slot(a, 4), 8);
  EXPECT_EQ(kv.slot(a, 5), 9);
  EXPECT_EQ(kv.slot(b, 2), 6);
}

TEST(KVCacheManagerTest, SlotRejectsPositionsOutsideLength) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 3));
  EXPECT_DRIFT_ERROR(kv.slot(s, 3), "position 3 out of range for sequence");
  EXPECT_DRIFT_ERROR(kv.slot(s, -1), "position -1 out of range");
}

// ---------------------------------------------------------------------------------------------
// Rewind, fork, free

TEST(KVCacheManagerTest, RewindReleasesPagesNoLongerNeeded) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 10));
  kv.rewind(s, 1);
  EXPECT_EQ(kv.block_table(s).size(), 3u);
  kv.rewind(s, 1);  // length 8: the third page is empty now
  EXPECT_THAT(kv.block_table(s), ElementsAre(0, 1));
  EXPECT_EQ(kv.ref_count(2), 0);
  EXPECT_EQ(kv.num_free_pages(), 6);
  kv.rewind(s, 0);
  EXPECT_EQ(kv.length(s), 8);
  kv.rewind(s, 8);
  EXPECT_TRUE(kv.block_table(s).empty());
  EXPECT_EQ(kv.num_free_pages(), 8);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, RewindRejectsMoreThanLengthAndNegative) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 5));
  EXPECT_DRIFT_ERROR(kv.rewind(s, 6), "cannot rewind 6 tokens of sequence");
  EXPECT_DRIFT_ERROR(kv.rewind(s, -1), "cannot rewind -1 tokens");
  EXPECT_EQ(kv.length(s), 5);
}

TEST(KVCacheManagerTest, ForkSharesEveryPageAndTheLength) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 6));
  SeqHandle f = kv.fork(s);
  EXPECT_NE(f, s);
  EXPECT_EQ(kv.length(f), 6);
  EXPECT_EQ(kv.block_table(f), kv.block_table(s));
  EXPECT_EQ(kv.ref_count(0), 2);
  EXPECT_EQ(kv.ref_count(1), 2);
  EXPECT_EQ(kv.num_free_pages(), 6);  // a fork takes no page
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, RewindOfForkKeepsSharedPagesForSibling) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 8));
  SeqHandle f = kv.fork(s);
  kv.rewind(f, 8);
  EXPECT_EQ(kv.ref_count(0), 1);
  EXPECT_EQ(kv.ref_count(1), 1);
  EXPECT_EQ(kv.num_free_pages(), 6);
  EXPECT_THAT(kv.block_table(s), ElementsAre(0, 1));
}

TEST(KVCacheManagerTest, FreeReturnsPagesNotSharedWithOthers) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 4));
  SeqHandle f = kv.fork(s);
  ASSERT_TRUE(kv.append(f, 4));  // f: [0, 1]
  kv.free(f);
  EXPECT_FALSE(kv.has_sequence(f));
  EXPECT_EQ(kv.num_sequences(), 1);
  EXPECT_EQ(kv.ref_count(0), 1);
  EXPECT_EQ(kv.ref_count(1), 0);
  kv.free(s);
  EXPECT_EQ(kv.num_free_pages(), 8);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, FreedHandleIsUnknownAndNeverReused) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  kv.free(s);
  EXPECT_DRIFT_ERROR(kv.free(s), "unknown sequence handle");
  EXPECT_NE(kv.create_sequence(), s);
  EXPECT_FALSE(kv.has_sequence(s));
}

// ---------------------------------------------------------------------------------------------
// Copy-on-write

TEST(KVCacheManagerTest, AppendCopiesSharedPartialLastPage) {
  KVCacheManager kv(8, 4);
  CopyLog log;
  kv.set_page_copier(log.copier());
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 6));  // [0, 1], page 1 half full
  SeqHandle f = kv.fork(s);
  ASSERT_TRUE(kv.append(f, 1));
  ASSERT_EQ(log.calls.size(), 1u);
  EXPECT_EQ(log.calls[0], std::make_pair(PageId{1}, PageId{2}));
  EXPECT_THAT(kv.block_table(f), ElementsAre(0, 2));
  EXPECT_THAT(kv.block_table(s), ElementsAre(0, 1));  // the sibling keeps the old page
  EXPECT_EQ(kv.ref_count(0), 2);
  EXPECT_EQ(kv.ref_count(1), 1);
  EXPECT_EQ(kv.ref_count(2), 1);
  ASSERT_TRUE(kv.append(s, 1));  // s owns page 1 alone now: written in place
  EXPECT_EQ(log.calls.size(), 1u);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, AppendAfterFullSharedPageAllocatesWithoutCopy) {
  KVCacheManager kv(8, 4);
  CopyLog log;
  kv.set_page_copier(log.copier());
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 4));
  SeqHandle f = kv.fork(s);
  ASSERT_TRUE(kv.append(f, 1));
  EXPECT_TRUE(log.calls.empty());
  EXPECT_THAT(kv.block_table(f), ElementsAre(0, 1));
  EXPECT_EQ(kv.ref_count(0), 2);
}

TEST(KVCacheManagerTest, AppendCopiesWhenPartialLastPageIsOnlyRetained) {
  KVCacheManager kv(8, 4);
  CopyLog log;
  kv.set_page_copier(log.copier());
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 2));
  kv.retain_page(0);  // an external holder must never see the page change
  ASSERT_TRUE(kv.append(s, 1));
  EXPECT_THAT(log.calls, ElementsAre(std::make_pair(PageId{0}, PageId{1})));
  EXPECT_THAT(kv.block_table(s), ElementsAre(1));
  EXPECT_EQ(kv.ref_count(0), 1);
}

TEST(KVCacheManagerTest, CopyOnWriteWithoutCopierStillDoesBookkeeping) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 1));
  SeqHandle f = kv.fork(s);
  ASSERT_TRUE(kv.append(f, 1));
  EXPECT_THAT(kv.block_table(f), ElementsAre(1));
  EXPECT_THAT(kv.block_table(s), ElementsAre(0));
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, AppendFailsWhenOnlyTheCopyDoesNotFit) {
  KVCacheManager kv(2, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 6));  // both pages used
  SeqHandle f = kv.fork(s);
  EXPECT_EQ(kv.pages_needed_to_append(f, 1), 1);
  EXPECT_FALSE(kv.append(f, 1));
  EXPECT_EQ(kv.length(f), 6);
  EXPECT_EQ(kv.block_table(f), kv.block_table(s));
  EXPECT_EQ(kv.ref_count(1), 2);
}

TEST(KVCacheManagerTest, ThrowingCopierLeavesStateUnchanged) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 2));
  SeqHandle f = kv.fork(s);
  kv.set_page_copier([](PageId, PageId) { throw std::runtime_error("device copy failed"); });
  EXPECT_THROW(kv.append(f, 1), std::runtime_error);
  EXPECT_THROW(kv.make_writable(f, 0), std::runtime_error);
  EXPECT_EQ(kv.length(f), 2);
  EXPECT_THAT(kv.block_table(f), ElementsAre(0));
  EXPECT_EQ(kv.ref_count(0), 2);
  EXPECT_EQ(kv.num_free_pages(), 3);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, MakeWritableCopiesSharedPage) {
  KVCacheManager kv(8, 4);
  CopyLog log;
  kv.set_page_copier(log.copier());
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 8));  // [0, 1], both full
  SeqHandle f = kv.fork(s);
  ASSERT_TRUE(kv.make_writable(f, 1));
  EXPECT_THAT(log.calls, ElementsAre(std::make_pair(PageId{0}, PageId{2})));
  EXPECT_THAT(kv.block_table(f), ElementsAre(2, 1));
  EXPECT_THAT(kv.block_table(s), ElementsAre(0, 1));
  ASSERT_TRUE(kv.make_writable(f, 3));  // already private: no second copy
  EXPECT_EQ(log.calls.size(), 1u);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, MakeWritableOnExclusivePageDoesNothing) {
  KVCacheManager kv(1, 4);
  CopyLog log;
  kv.set_page_copier(log.copier());
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 3));
  EXPECT_TRUE(kv.make_writable(s, 2));  // no free page, but none is needed
  EXPECT_TRUE(log.calls.empty());
  EXPECT_THAT(kv.block_table(s), ElementsAre(0));
}

TEST(KVCacheManagerTest, MakeWritableReturnsFalseWhenNoPageIsFree) {
  KVCacheManager kv(1, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 3));
  SeqHandle f = kv.fork(s);
  EXPECT_FALSE(kv.make_writable(f, 0));
  EXPECT_EQ(kv.ref_count(0), 2);
  EXPECT_THAT(kv.block_table(f), ElementsAre(0));
}

TEST(KVCacheManagerTest, MakeWritableRejectsPositionsOutsideLength) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 3));
  EXPECT_DRIFT_ERROR(kv.make_writable(s, 3), "make_writable: position 3 out of range");
  EXPECT_DRIFT_ERROR(kv.make_writable(s, -1), "position -1 out of range");
}

// ---------------------------------------------------------------------------------------------
// Adopt, retain, release

TEST(KVCacheManagerTest, AdoptPagesSharesRetainedPages) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 8));
  kv.retain_page(0);
  kv.retain_page(1);
  kv.free(s);  // the retains keep both pages alive
  EXPECT_EQ(kv.num_free_pages(), 6);
  SeqHandle t = kv.create_sequence();
  std::vector<PageId> hit = {0, 1};
  kv.adopt_pages(t, hit);
  EXPECT_EQ(kv.length(t), 8);
  EXPECT_THAT(kv.block_table(t), ElementsAre(0, 1));
  EXPECT_EQ(kv.ref_count(0), 2);
  EXPECT_NO_THROW(kv.check_integrity());
  ASSERT_TRUE(kv.append(t, 1));  // continues after the adopted full pages
  EXPECT_THAT(kv.block_table(t), ElementsAre(0, 1, 2));
}

TEST(KVCacheManagerTest, AdoptEmptyListLeavesSequenceEmpty) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  kv.adopt_pages(s, {});
  EXPECT_EQ(kv.length(s), 0);
  EXPECT_TRUE(kv.block_table(s).empty());
}

TEST(KVCacheManagerTest, AdoptRejectsBadInputAndChangesNothing) {
  KVCacheManager kv(8, 4);
  SeqHandle owner = kv.create_sequence();
  ASSERT_TRUE(kv.append(owner, 8));  // pages 0, 1 in use
  SeqHandle s = kv.create_sequence();
  std::vector<PageId> with_free = {0, 5};
  std::vector<PageId> duplicate = {1, 0, 1};
  std::vector<PageId> out_of_range = {0, 8};
  std::vector<PageId> negative = {-1};
  EXPECT_DRIFT_ERROR(kv.adopt_pages(s, with_free), "page 5 is free");
  EXPECT_DRIFT_ERROR(kv.adopt_pages(s, duplicate), "page 1 listed twice");
  EXPECT_DRIFT_ERROR(kv.adopt_pages(s, out_of_range), "page id 8 out of range");
  EXPECT_DRIFT_ERROR(kv.adopt_pages(s, negative), "page id -1 out of range");
  EXPECT_EQ(kv.length(s), 0);
  EXPECT_EQ(kv.ref_count(0), 1);
  EXPECT_EQ(kv.ref_count(1), 1);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, AdoptRejectsNonEmptySequence) {
  KVCacheManager kv(8, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 4));
  std::vector<PageId> pages = {0};
  EXPECT_DRIFT_ERROR(kv.adopt_pages(s, pages), "is not empty (length 4)");
}

TEST(KVCacheManagerTest, RetainKeepsPageAliveAndReleaseFreesIt) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 4));
  kv.retain_page(0);
  kv.retain_page(0);
  EXPECT_EQ(kv.ref_count(0), 3);
  kv.free(s);
  EXPECT_EQ(kv.ref_count(0), 2);
  EXPECT_EQ(kv.num_free_pages(), 3);
  kv.release_page(0);
  EXPECT_NO_THROW(kv.check_integrity());
  kv.release_page(0);
  EXPECT_EQ(kv.ref_count(0), 0);
  EXPECT_EQ(kv.num_free_pages(), 4);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, RetainAndReleaseRejectMisuse) {
  KVCacheManager kv(4, 4);
  SeqHandle s = kv.create_sequence();
  ASSERT_TRUE(kv.append(s, 4));
  EXPECT_DRIFT_ERROR(kv.retain_page(1), "retain_page: page 1 is free");
  // Page 0 is referenced by a sequence but was never retained: releasing it must not steal the
  // sequence's reference.
  EXPECT_DRIFT_ERROR(kv.release_page(0), "page 0 holds no retain_page reference");
  EXPECT_DRIFT_ERROR(kv.release_page(1), "page 1 holds no retain_page reference");
  EXPECT_DRIFT_ERROR(kv.retain_page(4), "page id 4 out of range");
  EXPECT_DRIFT_ERROR(kv.release_page(-1), "page id -1 out of range");
  EXPECT_DRIFT_ERROR(kv.ref_count(4), "ref_count: page id 4 out of range");
  EXPECT_EQ(kv.ref_count(0), 1);
  EXPECT_NO_THROW(kv.check_integrity());
}

TEST(KVCacheManagerTest, EveryMethodRejectsUnknownHandle) {
  KVCacheManager kv(4, 4);
  const SeqHandle bad = 42;
  std::vector<PageId> none;
  const std::vector<std::pair<const char*, std::function<void()>>> calls = {
      {"pages_needed_to_append", [&] { kv.pages_needed_to_append(bad, 1); }},
      {"append", [&] { kv.append(bad, 1); }},
      {"slot", [&] { kv.slot(bad, 0); }},
      {"rewind", [&] { kv.rewind(bad, 0); }},
      {"fork", [&] { kv.fork(bad); }},
      {"make_writable", [&] { kv.make_writable(bad, 0); }},
      {"free", [&] { kv.free(bad); }},
      {"adopt_pages", [&] { kv.adopt_pages(bad, none); }},
      {"length", [&] { kv.length(bad); }},
      {"block_table", [&] { kv.block_table(bad); }},
  };
  for (const auto& [name, call] : calls) {
    EXPECT_THAT(call, ThrowsMessage<DriftError>(HasSubstr(
                          std::string(name) + ": unknown sequence handle 42")));
  }
  EXPECT_FALSE(kv.has_sequence(bad));
  EXPECT_EQ(kv.num_sequences(), 0);
}

// A scripted tour through every kind of legitimate state: integrity must hold after each step.
TEST(KVCacheManagerTest, CheckIntegrityHoldsInEveryLegitimateState) {
  KVCacheManager kv(6, 4);
  std::vector<std::function<void()>> steps = {
      [&] { kv.create_sequence(); },                       // seq 0
      [&] { ASSERT_TRUE(kv.append(0, 6)); },               // [0, 1]
      [&] { kv.fork(0); },                                 // seq 1 shares both
      [&] { ASSERT_TRUE(kv.append(1, 1)); },               // COW of page 1
      [&] { kv.retain_page(0); },                          // external + 2 tables
      [&] { ASSERT_TRUE(kv.make_writable(0, 0)); },        // COW of page 0 for seq 0
      [&] { kv.rewind(0, 6); },                            // seq 0 empty again
      [&] { kv.adopt_pages(0, std::vector<PageId>{0}); },  // reuse the retained page
      [&] { EXPECT_FALSE(kv.append(1, 100)); },            // failed append changes nothing
      [&] { kv.free(1); },
      [&] { kv.release_page(0); },
      [&] { kv.free(0); },
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    steps[i]();
    ASSERT_NO_THROW(kv.check_integrity()) << "after step " << i;
  }
  EXPECT_EQ(kv.num_free_pages(), kv.num_pages());
}

// ---------------------------------------------------------------------------------------------
// Shadow model: a fake KV storage (one int64 "token value" per slot) that the PageCopier copies,
// and each sequence's logical contents kept independently of the manager. After every
// operation, reading a sequence through slot() must give exactly its shadow contents: a missing
// or wrong copy-on-write shows up as a sequence seeing another sequence's writes.

class ShadowHarness {
 public:
  enum class Copier { kCorrect, kNoOp, kReversed };
  static constexpr int64_t kUnwritten = -1;

  ShadowHarness(int64_t num_pages, int64_t block_size, Copier mode = Copier::kCorrect)
      : kv(num_pages, block_size), storage_(num_pages * block_size, kUnwritten) {
    kv.set_page_copier([this, mode](PageId src, PageId dst) {
      ++copies;
      if (mode == Copier::kNoOp) return;
      if (mode == Copier::kReversed) std::swap(src, dst);
      int64_t bs = kv.block_size();
      std::copy_n(storage_.begin() + src * bs, bs, storage_.begin() + dst * bs);
    });
  }

  SeqHandle create() {
    SeqHandle s = kv.create_sequence();
    shadow_[s] = {};
    return s;
  }

  // Appends n slots and writes a fresh value into each one.
  bool append(SeqHandle s, int64_t n) {
    int64_t old_length = kv.length(s);
    if (!kv.append(s, n)) return false;
    for (int64_t pos = old_length; pos < old_length + n; ++pos) {
      storage_[kv.slot(s, pos)] = next_value_;
      shadow_[s].push_back(next_value_++);
    }
    return true;
  }

  // Overwrites one position (a speculative write into the sequence's own KV).
  bool write(SeqHandle s, int64_t pos) {
    if (!kv.make_writable(s, pos)) return false;
    write_unchecked(s, pos);
    return true;
  }

  // Writes without make_writable: only for showing that the model catches a missing copy.
  void write_unchecked(SeqHandle s, int64_t pos) {
    storage_[kv.slot(s, pos)] = next_value_;
    shadow_[s][pos] = next_value_++;
  }

  void rewind(SeqHandle s, int64_t n) {
    kv.rewind(s, n);
    shadow_[s].resize(shadow_[s].size() - n);
  }

  SeqHandle fork(SeqHandle s) {
    SeqHandle f = kv.fork(s);
    shadow_[f] = shadow_[s];
    return f;
  }

  void free(SeqHandle s) {
    kv.free(s);
    shadow_.erase(s);
  }

  // Retains full page `index` of `s` and remembers what it must keep holding.
  void retain(SeqHandle s, int64_t index) {
    PageId page = kv.block_table(s)[index];
    kv.retain_page(page);
    int64_t bs = kv.block_size();
    auto first = shadow_[s].begin() + index * bs;
    retained_.push_back({page, std::vector<int64_t>(first, first + bs)});
  }

  void release(size_t retained_index) {
    kv.release_page(retained_[retained_index].page);
    retained_.erase(retained_.begin() + static_cast<std::ptrdiff_t>(retained_index));
  }

  // A new sequence made of retained pages (distinct ones, in the given order).
  SeqHandle adopt(const std::vector<size_t>& retained_indices) {
    std::vector<PageId> pages;
    std::vector<int64_t> contents;
    for (size_t i : retained_indices) {
      pages.push_back(retained_[i].page);
      contents.insert(contents.end(), retained_[i].contents.begin(), retained_[i].contents.end());
    }
    SeqHandle s = kv.create_sequence();
    kv.adopt_pages(s, pages);
    shadow_[s] = std::move(contents);
    return s;
  }

  // The first difference between the manager + storage and the shadow model, if any.
  std::optional<std::string> mismatch() const {
    if (kv.num_sequences() != static_cast<int64_t>(shadow_.size()))
      return "sequence count differs";
    for (const auto& [s, tokens] : shadow_) {
      if (kv.length(s) != static_cast<int64_t>(tokens.size()))
        return "length of sequence " + std::to_string(s) + " differs";
      for (int64_t pos = 0; pos < kv.length(s); ++pos) {
        if (storage_[kv.slot(s, pos)] != tokens[pos])
          return "sequence " + std::to_string(s) + " position " + std::to_string(pos) + " reads " +
                 std::to_string(storage_[kv.slot(s, pos)]) + ", wrote " +
                 std::to_string(tokens[pos]);
      }
    }
    int64_t bs = kv.block_size();
    for (const Retained& r : retained_)
      for (int64_t i = 0; i < bs; ++i)
        if (storage_[r.page * bs + i] != r.contents[i])
          return "retained page " + std::to_string(r.page) + " changed";
    return std::nullopt;
  }

  std::vector<SeqHandle> sequences() const {
    std::vector<SeqHandle> out;
    for (const auto& entry : shadow_) out.push_back(entry.first);
    return out;
  }
  size_t num_retained() const { return retained_.size(); }
  PageId retained_page(size_t i) const { return retained_[i].page; }

  KVCacheManager kv;
  int64_t copies = 0;

 private:
  struct Retained {
    PageId page;
    std::vector<int64_t> contents;
  };
  std::vector<int64_t> storage_;
  std::map<SeqHandle, std::vector<int64_t>> shadow_;
  std::vector<Retained> retained_;
  int64_t next_value_ = 1;
};

// Runs the shared scenario: s has 2 tokens in page 0, f = fork(s), f appends one token.
std::optional<std::string> fork_then_append(ShadowHarness::Copier mode) {
  ShadowHarness h(4, 4, mode);
  SeqHandle s = h.create();
  EXPECT_TRUE(h.append(s, 2));
  SeqHandle f = h.fork(s);
  EXPECT_TRUE(h.append(f, 1));
  EXPECT_EQ(h.copies, 1);
  return h.mismatch();
}

TEST(KVCacheManagerShadowTest, CorrectCopierPassesScriptedCopyOnWrite) {
  EXPECT_EQ(fork_then_append(ShadowHarness::Copier::kCorrect), std::nullopt);
}

TEST(KVCacheManagerShadowTest, DetectsCopierThatDoesNotCopy) {
  auto bad = fork_then_append(ShadowHarness::Copier::kNoOp);
  ASSERT_TRUE(bad.has_value());
  EXPECT_THAT(*bad, HasSubstr("position 0 reads -1"));
}

TEST(KVCacheManagerShadowTest, DetectsCopierWithSwappedArguments) {
  EXPECT_TRUE(fork_then_append(ShadowHarness::Copier::kReversed).has_value());
}

TEST(KVCacheManagerShadowTest, DetectsWriteIntoSharedPage) {
  ShadowHarness h(4, 4);
  SeqHandle s = h.create();
  ASSERT_TRUE(h.append(s, 3));
  SeqHandle f = h.fork(s);
  h.write_unchecked(f, 1);  // skips make_writable: s would see f's write
  auto bad = h.mismatch();
  ASSERT_TRUE(bad.has_value());
  EXPECT_THAT(*bad, HasSubstr("sequence " + std::to_string(s) + " position 1"));
}

TEST(KVCacheManagerShadowTest, RandomOperationsNeverMixSequencesOrLeakPages) {
  constexpr int kOps = 20000;
  constexpr size_t kMaxSequences = 12;
  constexpr size_t kMaxRetained = 16;
  ShadowHarness h(48, 4);
  KVCacheManager& kv = h.kv;
  const int64_t bs = kv.block_size();
  std::mt19937_64 rng(0x5eed'001);
  auto below = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  std::map<std::string, int> done;  // how often each path ran, to prove the test covers them

  for (int op = 0; op < kOps; ++op) {
    std::vector<SeqHandle> seqs = h.sequences();
    int64_t roll = below(100);
    if (seqs.empty() || (roll < 5 && seqs.size() < kMaxSequences)) {
      h.create();
      ++done["create"];
    } else if (roll < 5) {
      // Too many sequences: free one instead of creating.
      h.free(seqs[below(static_cast<int64_t>(seqs.size()))]);
      ++done["free"];
    } else {
      SeqHandle s = seqs[below(static_cast<int64_t>(seqs.size()))];
      int64_t length = kv.length(s);
      if (roll < 35) {
        int64_t n = below(10) == 0 ? below(64) : below(2 * bs + 2);
        int64_t need = kv.pages_needed_to_append(s, n);
        int64_t free_before = kv.num_free_pages();
        std::vector<PageId> table_before = kv.block_table(s);
        bool ok = h.append(s, n);
        ASSERT_EQ(ok, need <= free_before) << "op " << op;
        if (ok) {
          ASSERT_EQ(kv.num_free_pages(), free_before - need) << "op " << op;
          ++done[need > kv.pages_for_tokens(length + n) - kv.pages_for_tokens(length)
                     ? "append_cow"
                     : "append"];
        } else {
          ASSERT_EQ(kv.num_free_pages(), free_before) << "op " << op;
          ASSERT_EQ(kv.block_table(s), table_before) << "op " << op;
          ASSERT_EQ(kv.length(s), length) << "op " << op;
          ++done["append_failed"];
        }
      } else if (roll < 47) {
        h.rewind(s, below(std::min<int64_t>(length, 2 * bs) + 1));
        ++done["rewind"];
      } else if (roll < 55) {
        if (seqs.size() < kMaxSequences) {
          h.fork(s);
          ++done["fork"];
        }
      } else if (roll < 75) {
        if (length > 0) {
          int64_t pos = below(length);
          bool shared = kv.ref_count(kv.block_table(s)[pos / bs]) > 1;
          bool had_free_page = kv.num_free_pages() > 0;
          bool ok = h.write(s, pos);
          ASSERT_EQ(ok, !shared || had_free_page) << "op " << op;
          if (ok) {
            ASSERT_EQ(kv.ref_count(kv.block_table(s)[pos / bs]), 1) << "op " << op;
          }
          ++done[!ok ? "write_failed" : shared ? "write_cow" : "write"];
        }
      } else if (roll < 82) {
        h.free(s);
        ++done["free"];
      } else if (roll < 89) {
        if (length >= bs && h.num_retained() < kMaxRetained) {
          h.retain(s, below(length / bs));
          ++done["retain"];
        }
      } else if (roll < 95) {
        if (h.num_retained() > 0) {
          h.release(static_cast<size_t>(below(static_cast<int64_t>(h.num_retained()))));
          ++done["release"];
        }
      } else if (h.num_retained() > 0 && seqs.size() < kMaxSequences) {
        // Adopt a random subset of retained entries naming distinct pages (a page may be
        // retained more than once, and a block table lists each page once).
        std::vector<size_t> picked;
        std::vector<PageId> pages;
        for (size_t i = 0; i < h.num_retained(); ++i) {
          PageId page = h.retained_page(i);
          if (below(2) == 0 && std::find(pages.begin(), pages.end(), page) == pages.end()) {
            picked.push_back(i);
            pages.push_back(page);
          }
        }
        h.adopt(picked);
        ++done["adopt"];
      }
    }
    ASSERT_NO_THROW(kv.check_integrity()) << "op " << op;
    auto bad = h.mismatch();
    ASSERT_FALSE(bad.has_value()) << *bad << " after op " << op;
  }

  for (const char* path : {"create", "append", "append_cow", "append_failed", "rewind", "fork",
                           "write", "write_cow", "write_failed", "free", "retain", "release",
                           "adopt"})
    EXPECT_GT(done[path], 0) << path << " never ran";
  EXPECT_GT(h.copies, 0);

  // Drop every external reference and every sequence: no page may be left behind.
  while (h.num_retained() > 0) h.release(h.num_retained() - 1);
  for (SeqHandle s : h.sequences()) h.free(s);
  EXPECT_NO_THROW(kv.check_integrity());
  EXPECT_EQ(kv.num_sequences(), 0);
  EXPECT_EQ(kv.num_free_pages(), kv.num_pages());
  for (PageId p = 0; p < kv.num_pages(); ++p) EXPECT_EQ(kv.ref_count(p), 0) << "page " << p;
}

}  // namespace
}  // namespace drift
