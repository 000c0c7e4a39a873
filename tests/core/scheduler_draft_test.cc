// Drafts as lookahead tokens in the scheduler: a decode sequence's draft is scheduled after every
// decode token has its slot, shrinks (to a topological prefix) to the token budget and to the
// pages its policy lets it take, never preempts anyone, and guaranteed_no_evict reserves each
// speculating request's draft room at admission. Removing a sequence drops its pending draft.
#include <gtest/gtest.h>

#include "core/scheduler.h"

namespace drift {
namespace {

constexpr int64_t kBlock = 4;

struct Pool {
  KVCacheManager kv;
  Scheduler scheduler;
  std::vector<std::unique_ptr<Sequence>> seqs;

  Pool(int64_t pages, const char* policy, int64_t budget)
      : kv(pages, kBlock), scheduler({8, budget, 1024}, make_capacity_policy(policy, 1024), kv) {}

  Sequence& add(int64_t prompt_len, int64_t max_new = 32, int64_t draft_room = 0) {
    auto s = std::make_unique<Sequence>();
    s->id = static_cast<int64_t>(seqs.size());
    s->arrival = s->id;
    s->prompt.assign(prompt_len, 7);
    s->params.max_new_tokens = max_new;
    s->draft_room = draft_room;
    scheduler.add(s.get());
    seqs.push_back(std::move(s));
    return *seqs.back();
  }
  // Applies a step as the engine would for chunks without drafts: computed, one token out.
  SchedulerOutput step() {
    SchedulerOutput out = scheduler.schedule();
    for (const ScheduledChunk& c : out.chunks) {
      EXPECT_TRUE(c.draft.empty());
      c.seq->num_computed += c.count;
      if (c.wants_logits) c.seq->output.push_back(1);
    }
    return out;
  }
};

DraftTree chain(int32_t n) {
  DraftTree t;
  for (int32_t i = 0; i < n; ++i) {
    t.tokens.push_back(10 + i);
    t.parents.push_back(i - 1);
  }
  return t;
}

TEST(SchedulerDraftTest, DraftShrinksToTheTokenBudgetKeepingATopologicalPrefix) {
  Pool s(64, "max_utilization", 4);
  Sequence& a = s.add(3);
  s.step();  // prefill, first token
  a.draft = DraftTree({5, 6, 7, 8, 9}, {-1, -1, 0, 1, 2});
  const SchedulerOutput out = s.scheduler.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_EQ(out.chunks[0].count, 4) << "the root and three nodes";
  EXPECT_EQ(out.chunks[0].draft.tokens, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(out.chunks[0].draft.parents, (std::vector<int32_t>{-1, -1, 0}));
  EXPECT_EQ(s.kv.length(a.kv), a.num_computed + 4) << "tail slots reserved for the tree";
  EXPECT_TRUE(a.draft.empty()) << "the draft moved into the schedule";
}

TEST(SchedulerDraftTest, UnderMaxUtilizationDraftsShrinkBeforeAnyoneIsPreempted) {
  Pool s(5, "max_utilization", 64);  // 20 slots
  Sequence& a = s.add(5, 3);
  Sequence& b = s.add(5, 3);
  s.step();  // both prefilled: two pages each, one free
  ASSERT_EQ(s.scheduler.running().size(), 2u);
  ASSERT_EQ(s.kv.num_free_pages(), 1);
  a.draft = chain(8);
  b.draft = chain(8);
  const SchedulerOutput out = s.scheduler.schedule();
  EXPECT_TRUE(out.preempted.empty()) << "a draft never preempts";
  ASSERT_EQ(out.chunks.size(), 2u) << "both decode tokens are scheduled";
  // Each holds 8 slots (5 prompt + the root leave 2 free); the free page goes to the first.
  EXPECT_EQ(out.chunks[0].draft.size(), 6u);
  EXPECT_EQ(out.chunks[1].draft.size(), 2u);
  EXPECT_EQ(s.kv.num_free_pages(), 0);
  s.kv.check_integrity();
}

TEST(SchedulerDraftTest, GuaranteedNoEvictReservesDraftRoomAndKeepsDraftsInsideIt) {
  // Prompt 4 + 4 new tokens = 2 pages; with 8 slots of draft room the worst case is 4 pages.
  Pool s(6, "guaranteed_no_evict", 64);
  Sequence& a = s.add(4, 4, 8);
  s.add(4, 4, 8);
  s.step();
  EXPECT_EQ(s.scheduler.running().size(), 1u) << "the second request's draft room does not fit beside the first's";
  a.draft = chain(20);
  const SchedulerOutput out = s.scheduler.schedule();
  ASSERT_EQ(out.chunks.size(), 1u);
  EXPECT_LE(s.kv.block_table(a.kv).size(), 4u) << "the draft stays inside the sequence's own promise";
  EXPECT_EQ(out.chunks[0].draft.size(), 16u - 5u) << "4 pages: 16 slots, 5 taken by the prompt and the root";

  Pool plain(6, "guaranteed_no_evict", 64);  // without draft room both requests fit
  plain.add(4, 4);
  plain.add(4, 4);
  plain.step();
  EXPECT_EQ(plain.scheduler.running().size(), 2u);
}

TEST(SchedulerDraftTest, RemovalDropsAPendingDraft) {
  Pool s(64, "max_utilization", 64);
  Sequence& a = s.add(3);
  s.step();
  a.draft = chain(3);
  s.scheduler.remove(&a);
  EXPECT_TRUE(a.draft.empty());
  EXPECT_EQ(s.kv.num_free_pages(), 64);
}

}  // namespace
}  // namespace drift
