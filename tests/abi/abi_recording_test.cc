// The recording plugin driven through PluginHost the way DESIGN.md's engine step drives it:
// two requests sharing a prefix, speculative steps with accept/rewind, a preemption (with a
// cache eviction), an abort and a resumed request. The log proves order and arguments of
// every hook. (Engine-level runs of the same plugin come with the engine loop.)
#include "abi_test_util.h"

namespace drift::test {
namespace {

using ::testing::ElementsAre;

TEST(RecordingPlugin, EveryHookInOrderWithItsArgumentsAcrossPreemptionAndAbort) {
  LogCapture log;
  PluginHost host;
  host.set_model_info(small_model());  // block_size 4, 2 layers
  host.load_all({entry("rec", DRIFT_ABI_PLUGIN_RECORDING)});
  host.select("rec", "rec");
  EXPECT_EQ(host.capture_layers(), std::vector<int32_t>{1});

  // Admit request 1 (9 prompt tokens: 2 full pages may come from a cache).
  int32_t prompt1[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_TRUE(host.prefix_match(request(1, prompt1), 2).empty());
  RequestInfo r1 = request(1, prompt1);
  r1.speculates = true;  // with [speculative]'s provider, "rec": drafts=1
  host.request_start(r1);
  // Step 1: prefill of request 1; its two full pages are offered; the first token committed.
  int32_t pages1[] = {10, 11};
  EXPECT_THAT(host.pages_full(FullPages{1, 0, pages1, std::span(prompt1, 8), {}}), ElementsAre(10, 11));
  int32_t first[] = {42};
  host.accept(1, first);
  // Its prompt's 9 rows ran (no hidden-state callbacks here: the recorder marks them "!").
  ForwardRows step1[] = {{1, 0, 9, 10}};
  host.target_forward(StepInfo{1}, step1);

  // Admit request 2, sharing request 1's first 8 tokens.
  int32_t prompt2[] = {1, 2, 3, 4, 5, 6, 7, 8, 7, 7};
  EXPECT_THAT(host.prefix_match(request(2, prompt2), 2), ElementsAre(10, 11));
  RequestInfo r2 = request(2, prompt2);
  r2.num_cached_tokens = 8;
  host.request_start(r2);

  // Step 2: both decode speculatively.
  DraftRequest drafts[] = {{1, 3, ""}, {2, 2, ""}};
  std::vector<DraftTree> trees = host.propose(StepInfo{2}, drafts);
  EXPECT_THAT(trees[0].tokens, ElementsAre(10, 11, 12));
  EXPECT_THAT(trees[0].parents, ElementsAre(-1, 0, 1));
  EXPECT_THAT(trees[0].probs, ElementsAre(0.5f, 0.5f, 0.5f));
  EXPECT_THAT(trees[1].tokens, ElementsAre(20, 21));
  const int32_t table[] = {0, 1, 2};
  KvViewRequest views[] = {{1, table, 2}, {2, table, 2}};
  EXPECT_TRUE(host.choose_kv_view(StepInfo{2}, views)[1].full);
  int32_t accepted1[] = {10, 11, 50};
  host.accept(1, accepted1);
  host.rewind(1, 1);
  int32_t accepted2[] = {60};
  host.accept(2, accepted2);
  host.rewind(2, 2);
  ForwardRows step2[] = {{1, 9, 3, 13}, {2, 8, 2, 11}};
  host.target_forward(StepInfo{2}, step2);

  // Pages run out: request 2 is preempted (recompute), the cache gives one page back, then
  // the caller aborts request 1.
  host.request_finish(2, HookFinishReason::Preempted);
  EXPECT_THAT(host.evict(1), ElementsAre(10));
  host.request_finish(1, HookFinishReason::Abort);

  // Request 2 resumes: prompt + its generated token; block 0 is no longer cached.
  int32_t resumed2[] = {1, 2, 3, 4, 5, 6, 7, 8, 7, 7, 60};
  EXPECT_TRUE(host.prefix_match(request(2, resumed2, 10), 2).empty());
  RequestInfo again = request(2, resumed2, 10);
  again.resumed = true;
  again.speculates = true;
  again.draft_provider = "someone_else";  // another provider drafts for it now: drafts=0
  host.request_start(again);
  DraftRequest one[] = {{2, 1, ""}};
  host.propose(StepInfo{3}, one);
  host.choose_kv_view(StepInfo{3}, std::span(views + 1, 1));
  int32_t last[] = {20, 61};
  host.accept(2, last);
  host.request_finish(2, HookFinishReason::Length);

  EXPECT_EQ(recording(host, "rec"),
            "create\n"
            "declare_needs max=2\n"
            "prefix_match seq=1 max_pages=2 -> pages=[]\n"
            "request_start seq=1 tokens=[1,2,3,4,5,6,7,8,9] prompt=9 cached=0 max_new=8 resumed=0 drafts=1\n"
            "pages_full seq=1 first=0 pages=[10,11]\n"
            "accept seq=1 tokens=[42]\n"
            "target_forward step=1 1:9@0/10!\n"
            "prefix_match seq=2 max_pages=2 -> pages=[10,11]\n"
            "request_start seq=2 tokens=[1,2,3,4,5,6,7,8,7,7] prompt=10 cached=8 max_new=8 resumed=0 drafts=0\n"
            "propose step=2 1:3 2:2\n"
            "choose_kv_view step=2 1:3 2:3\n"
            "accept seq=1 tokens=[10,11,50]\n"
            "rewind seq=1 n=1\n"
            "accept seq=2 tokens=[60]\n"
            "rewind seq=2 n=2\n"
            "target_forward step=2 1:3@9/13! 2:2@8/11!\n"
            "request_finish seq=2 reason=3\n"
            "evict wanted=1 -> pages=[10]\n"
            "request_finish seq=1 reason=2\n"
            "prefix_match seq=2 max_pages=2 -> pages=[]\n"
            "request_start seq=2 tokens=[1,2,3,4,5,6,7,8,7,7,60] prompt=10 cached=0 max_new=8 resumed=1 drafts=0\n"
            "propose step=3 2:1\n"
            "choose_kv_view step=3 2:3\n"
            "accept seq=2 tokens=[20,61]\n"
            "request_finish seq=2 reason=1\n");
  EXPECT_THAT(host.held_pages(), ElementsAre(11));  // the engine releases these at shutdown
  EXPECT_TRUE(log.fallbacks().empty());
}

}  // namespace
}  // namespace drift::test
