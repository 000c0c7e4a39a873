// PluginHost dispatch: config order, per-request fallback (error status, C++ exception,
// invalid results), roles, and the cache-page bookkeeping.
#include <fstream>
#include <sstream>
#include <tuple>

#include "abi_test_util.h"
#include "core/error.h"
#include "support/test_data.h"

namespace drift::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PluginDispatch, CommonAndCacheHooksRunInConfigOrder) {
  std::string log_path = make_temp_dir("drift-abi") + "/calls.log";
  std::string shared = "log_path = \"" + log_path + "\"\n";
  auto host_ptr = std::make_unique<PluginHost>();
  PluginHost& host = *host_ptr;
  host.set_model_info(small_model());
  host.load_all({entry("rec_b", DRIFT_ABI_PLUGIN_RECORDING, shared + "tag = \"b\"\n"),
                 entry("good", DRIFT_ABI_PLUGIN_GOOD),
                 entry("rec_a", DRIFT_ABI_PLUGIN_RECORDING, shared + "tag = \"a\"\n")});
  int32_t prompt[] = {1, 2, 3, 4, 5};
  int32_t accepted[] = {9};
  int32_t pages[] = {3};
  host.prefix_match(request(1, prompt), 1);
  host.request_start(request(1, prompt));
  host.accept(1, accepted);
  host.rewind(1, 2);
  host.pages_full(FullPages{1, 0, pages, std::span(prompt, 4), {}});
  host.request_finish(1, HookFinishReason::Stop);
  // `good` sat between them for every hook.
  for (const char* hook : {"on_request_start", "on_accept", "on_rewind", "on_prefix_match", "on_pages_full"})
    EXPECT_EQ(calls(host, "good", hook, 1), 1) << hook;
  host_ptr.reset();  // destroy runs in reverse config order
  EXPECT_EQ(read_file(log_path),
            "b: create\nb: declare_needs max=2\na: create\na: declare_needs max=2\n"
            "b: prefix_match seq=1 max_pages=1 -> pages=[]\n"
            "a: prefix_match seq=1 max_pages=1 -> pages=[]\n"
            "b: request_start seq=1 tokens=[1,2,3,4,5] prompt=5 cached=0 max_new=8 resumed=0 drafts=0\n"
            "a: request_start seq=1 tokens=[1,2,3,4,5] prompt=5 cached=0 max_new=8 resumed=0 drafts=0\n"
            "b: accept seq=1 tokens=[9]\na: accept seq=1 tokens=[9]\n"
            "b: rewind seq=1 n=2\na: rewind seq=1 n=2\n"
            "b: pages_full seq=1 first=0 pages=[3]\na: pages_full seq=1 first=0 pages=[3]\n"
            "b: request_finish seq=1 reason=0\na: request_finish seq=1 reason=0\n"
            "a: destroy\nb: destroy\n");
}

TEST(PluginDispatch, FailingHookDisablesThePluginForThatRequestOnly) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("bad", DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR,
                       "fail_hook = \"on_accept\"\nfail_seq = 1\n"),
                 entry("good", DRIFT_ABI_PLUGIN_GOOD)});
  int32_t token[] = {4};
  for (drift_seq_id_t seq : {1, 2}) host.request_start(request(seq));
  host.accept(1, token);  // fails: request 1 goes on without `bad`
  host.accept(1, token);
  host.rewind(1, 1);
  host.accept(2, token);
  host.request_finish(1, HookFinishReason::Stop);
  host.request_start(request(3));
  host.accept(3, token);

  ASSERT_EQ(log.fallbacks().size(), 1u);
  EXPECT_EQ(log.fallbacks()[0],
            "[fallback] plugin 'bad' hook on_accept returned DRIFT_ERROR (1); request 1 continues "
            "without it");
  EXPECT_EQ(calls(host, "bad", "on_accept", 1), 1);   // not called again for request 1
  EXPECT_EQ(calls(host, "bad", "on_rewind", 1), 0);
  EXPECT_EQ(calls(host, "bad", "on_accept", 2), 1);   // other requests unaffected
  EXPECT_EQ(calls(host, "bad", "on_accept", 3), 1);
  EXPECT_EQ(calls(host, "good", "on_accept", 1), 2);  // the other plugins carry on
  EXPECT_EQ(calls(host, "good", "on_rewind", 1), 1);
}

// Drafts for requests 1 and 2 over three steps with `plugin` as draft provider.
std::vector<std::vector<DraftTree>> draft_three_steps(PluginHost& host) {
  std::vector<std::vector<DraftTree>> steps;
  DraftRequest both[] = {{1, 3, ""}, {2, 2, ""}};
  DraftRequest only_one[] = {{1, 3, ""}};
  steps.push_back(host.propose(StepInfo{1}, std::span(both, 1)));
  steps.push_back(host.propose(StepInfo{2}, both));
  steps.push_back(host.propose(StepInfo{3}, only_one));
  return steps;
}

void expect_no_draft_for_request_1(const std::vector<std::vector<DraftTree>>& steps) {
  EXPECT_TRUE(steps[0][0].tokens.empty());
  EXPECT_TRUE(steps[1][0].tokens.empty());
  EXPECT_THAT(steps[1][1].tokens, ElementsAre(1, 2));  // request 2 still drafts
  EXPECT_THAT(steps[1][1].parents, ElementsAre(-1, 0));
  EXPECT_TRUE(steps[2][0].tokens.empty());
}

TEST(PluginDispatch, ProposeErrorMeansNoDraftForThatRequest) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("bad", DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR,
                       "fail_hook = \"on_propose\"\nfail_seq = 1\n")});
  host.select("bad", "full");
  auto steps = draft_three_steps(host);
  expect_no_draft_for_request_1(steps);
  EXPECT_EQ(calls(host, "bad", "on_propose", 1), 1);
  ASSERT_EQ(log.fallbacks().size(), 1u);
  EXPECT_THAT(log.fallbacks()[0],
              HasSubstr("plugin 'bad' hook on_propose set status 1 for this sequence; request 1 continues without it"));

  // Without the request-1 failure the result for request 1 is exactly "no draft provider".
  PluginHost plain;
  plain.select("", "full");
  auto baseline = draft_three_steps(plain);
  EXPECT_TRUE(baseline[0][0].tokens.empty() && baseline[2][0].tokens.empty());
}

TEST(PluginDispatch, PerSequenceStatusFailsOnlyThatSequenceOfTheBatch) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("bad", DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_propose\"\nfail_seq = 1\n")});
  host.select("bad", "full");
  DraftRequest both[] = {{1, 3, ""}, {2, 2, ""}};
  auto trees = host.propose(StepInfo{1}, both);
  EXPECT_TRUE(trees[0].tokens.empty());
  EXPECT_THAT(trees[1].tokens, ElementsAre(1, 2));  // the same call, its own status OK
  ASSERT_EQ(log.fallbacks().size(), 1u);
  EXPECT_THAT(log.fallbacks()[0], HasSubstr("request 1 continues"));

  // The same plugin failing the whole call: every sequence of it goes without a draft.
  LogCapture whole_log;
  PluginHost whole;
  whole.load_all({entry("bad", DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_propose\"\n")});
  whole.select("bad", "full");
  trees = whole.propose(StepInfo{1}, both);
  EXPECT_TRUE(trees[0].tokens.empty() && trees[1].tokens.empty());
  ASSERT_EQ(whole_log.fallbacks().size(), 1u);
  EXPECT_THAT(whole_log.fallbacks()[0], HasSubstr("hook on_propose returned DRIFT_ERROR (1); requests 1, 2 continue"));
}

TEST(PluginDispatch, ExceptionThrownThroughTheCBoundaryIsCaught) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("thrower", DRIFT_ABI_PLUGIN_HOOK_THROWS, "fail_seq = 1\n")});
  host.select("thrower", "full");
  auto steps = draft_three_steps(host);
  expect_no_draft_for_request_1(steps);
  ASSERT_EQ(log.fallbacks().size(), 1u);
  EXPECT_EQ(log.fallbacks()[0],
            "[fallback] plugin 'thrower' hook on_propose threw an exception: hook_throws: "
            "on_propose failed on purpose for request 1; request 1 continues without it");
}

TEST(PluginDispatch, VerificationPolicyErrorFallsBackToFull) {
  LogCapture log;
  PluginHost host;
  host.set_model_info(small_model());
  host.load_all({entry("bad", DRIFT_ABI_PLUGIN_HOOK_RETURNS_ERROR, "fail_hook = \"on_choose_kv_view\"\n"),
                 entry("rec", DRIFT_ABI_PLUGIN_RECORDING, "view = \"first_page\"\n")});
  host.select("", "bad");
  const int32_t table[] = {0, 5};
  KvViewRequest requests[] = {{1, table, 1}, {2, table, 1}};
  for (const KvView& view : host.choose_kv_view(StepInfo{1}, requests)) EXPECT_TRUE(view.full);
  EXPECT_EQ(log.fallbacks().size(), 1u);
  EXPECT_THAT(log.fallbacks()[0], HasSubstr("requests 1, 2 continue without it"));

  host.select("", "rec");  // a policy choosing explicit page lists
  std::vector<KvView> views = host.choose_kv_view(StepInfo{2}, requests);
  EXPECT_FALSE(views[0].full);
  EXPECT_THAT(views[0].lists, ElementsAre(ElementsAre(0), ElementsAre(0)));
}

// ABI 1.3: the host attends to what a view lists only after checking every page against its own
// copy of the block table -- a page of another sequence, the tail (where the tree's KV goes) or a
// page listed twice makes that request verify fully, with one [fallback] line.
TEST(PluginDispatch, ViewPagesOutsideTheSequencesOwnPrefixFallBackToFull) {
  drift_model_info_t model = small_model();
  for (const auto& [view, table, tail, why] : {std::tuple{"first_page", std::vector<int32_t>{7, 0}, int64_t{1},
                                                          "page 0, which is not one of the sequence's 1 pages"},
                                               std::tuple{"first_page", std::vector<int32_t>{0, 3}, int64_t{0},
                                                          "page 0, which is not one of the sequence's 0 pages"},
                                               std::tuple{"first_page", std::vector<int32_t>{4, 5}, int64_t{2},
                                                          "page 0, which is not one of the sequence's 2 pages"},
                                               std::tuple{"first_page_twice", std::vector<int32_t>{0, 5, 9}, int64_t{2},
                                                          "list 0 names a page more than once"}}) {
    LogCapture log;
    PluginHost host;
    host.set_model_info(model);
    host.load_all({entry("rec", DRIFT_ABI_PLUGIN_RECORDING, std::string("view = \"") + view + "\"\n")});
    host.select("", "rec");
    KvViewRequest request{1, table, tail};
    EXPECT_TRUE(host.choose_kv_view(StepInfo{1}, std::span(&request, 1)).at(0).full);
    ASSERT_EQ(log.fallbacks().size(), 1u);
    EXPECT_THAT(log.fallbacks()[0], HasSubstr(why));
  }
}

TEST(PluginDispatch, InvalidDraftTreeIsRejectedForThatRequest) {
  LogCapture log;
  drift_model_info_t model = small_model();
  model.vocab_size = 3;  // `good` drafts tokens 1, 2, 3, ...: a budget of 3 leaves the vocabulary
  PluginHost host;
  host.set_model_info(model);
  host.load_all({entry("good", DRIFT_ABI_PLUGIN_GOOD)});
  host.select("good", "full");
  DraftRequest requests[] = {{1, 2, ""}, {2, 3, ""}};
  std::vector<DraftTree> trees = host.propose(StepInfo{1}, requests);
  EXPECT_THAT(trees[0].tokens, ElementsAre(1, 2));
  EXPECT_TRUE(trees[1].tokens.empty());
  ASSERT_EQ(log.fallbacks().size(), 1u);
  EXPECT_THAT(log.fallbacks()[0], HasSubstr("node 2 has token 3, outside the vocabulary [0, 3); request 2"));
}

// Hardening item 9: a role given to a missing plugin or one of the wrong kind is a broken setup,
// an error naming the role and the plugin (it used to be a warning, and the run went on without
// the strategy it was meant to measure).
TEST(PluginDispatch, RolesNameConfiguredPluginsOfTheRightKind) {
  LogCapture log;
  PluginHost host;
  host.load_all({entry("opt", DRIFT_ABI_PLUGIN_OPTIONAL_HOOK_NULL)});
  try {
    host.select("opt", "full");
    ADD_FAILURE() << "a plugin that is no draft provider was given the role";
  } catch (const DriftError& e) {
    EXPECT_STREQ(e.what(), "speculative: draft_provider = \"opt\" is not a draft_provider");
  }
  try {
    host.select("", "missing");
    ADD_FAILURE() << "an unconfigured verification policy was accepted";
  } catch (const DriftError& e) {
    EXPECT_STREQ(e.what(), "speculative: verification_policy = \"missing\" is not configured");
  }
  EXPECT_FALSE(host.has_draft_provider());
  EXPECT_TRUE(log.fallbacks().empty());
}

TEST(PluginDispatch, CacheManagerPagesAreTrackedByTheHost) {
  LogCapture log;
  PluginHost host;
  host.set_model_info(small_model());
  host.load_all({entry("rec", DRIFT_ABI_PLUGIN_RECORDING), entry("good", DRIFT_ABI_PLUGIN_GOOD)});
  int32_t prompt[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int32_t pages[] = {10, 11};
  EXPECT_THAT(host.pages_full(FullPages{1, 0, pages, std::span(prompt, 8), {}}), ElementsAre(10, 11));
  EXPECT_TRUE(host.pages_full(FullPages{2, 0, pages, std::span(prompt, 8), {}}).empty());  // held already
  EXPECT_THAT(host.prefix_match(request(2, prompt), 2), ElementsAre(10, 11));
  EXPECT_THAT(host.prefix_match(request(3, prompt), 1), ElementsAre(10));
  EXPECT_THAT(host.held_pages(), ElementsAre(10, 11));
  EXPECT_THAT(host.evict(1), ElementsAre(10));
  EXPECT_TRUE(host.prefix_match(request(4, prompt), 2).empty());  // chain broken at block 0
  EXPECT_THAT(host.evict(5), ElementsAre(11));
  EXPECT_TRUE(host.held_pages().empty());
  EXPECT_TRUE(log.fallbacks().empty());
}

// The host keeps its own record of every held page (block index, chain key, tokens) and checks
// each page a cache manager names against the request: a cache that names pages holding other
// tokens -- or the same tokens under another cache salt -- is refused for that request.
TEST(PluginDispatch, MatchedPagesMustHoldTheRequestsOwnTokensAndSalt) {
  LogCapture log;
  PluginHost host;
  host.set_model_info(small_model());
  host.load_all({entry("liar", DRIFT_ABI_PLUGIN_RECORDING, "lie = true\n")});
  int32_t prompt[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  int32_t other[] = {1, 2, 3, 4, 9, 9, 9, 9, 9};
  int32_t pages[] = {10, 11};
  FullPages full{1, 0, pages, std::span(prompt, 8), {}};
  full.cache_salt = "tenant-a";
  ASSERT_THAT(host.pages_full(full), ElementsAre(10, 11));
  RequestInfo same = request(2, prompt);
  same.cache_salt = "tenant-a";
  EXPECT_THAT(host.prefix_match(same, 2), ElementsAre(10, 11));
  RequestInfo wrong_tokens = request(3, other);
  wrong_tokens.cache_salt = "tenant-a";
  EXPECT_TRUE(host.prefix_match(wrong_tokens, 2).empty());
  RequestInfo wrong_salt = request(4, prompt);
  wrong_salt.cache_salt = "tenant-b";
  EXPECT_TRUE(host.prefix_match(wrong_salt, 2).empty());
  ASSERT_EQ(log.fallbacks().size(), 2u);
  EXPECT_THAT(log.fallbacks()[0], HasSubstr("matched page 11 for block 1, but it holds the KV of other tokens"));
  EXPECT_THAT(log.fallbacks()[1], HasSubstr("matched page 10 for block 0"));
}

// host->release_pages: a cache manager gives back pages it holds, and only those, and never from
// on_prefix_match; the engine's release_page callback sees each page once.
TEST(PluginDispatch, ReleasePagesGivesBackHeldPagesOnly) {
  int32_t prompt[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int32_t first[] = {10, 11};
  int32_t second[] = {12};
  for (const std::string probe : {"held", "foreign", "in_match"}) {
    SCOPED_TRACE(probe);
    LogCapture log;
    PluginHost host;
    std::vector<drift_page_id_t> released;
    host.callbacks().release_page = [&](drift_page_id_t page) { released.push_back(page); };
    host.set_model_info(small_model());
    host.load_all({entry("rec", DRIFT_ABI_PLUGIN_RECORDING, "release_probe = \"" + probe + "\"\n")});
    host.pages_full(FullPages{1, 0, first, std::span(prompt, 8), {}});
    if (probe == "in_match") host.prefix_match(request(2, prompt), 2);
    host.pages_full(FullPages{1, 2, second, std::span(prompt + 8, 4), std::span(prompt, 8)});
    const std::string text = recording(host, "rec");
    if (probe == "held") {  // the second offer first gave back the two pages of the first
      EXPECT_THAT(released, ElementsAre(10, 11));
      EXPECT_THAT(text, HasSubstr("release_pages status=0"));
      EXPECT_THAT(host.held_pages(), ElementsAre(12));
      EXPECT_TRUE(log.matching("release_pages refused").empty());
    } else {
      EXPECT_TRUE(released.empty());
      EXPECT_THAT(text, HasSubstr("release_pages status=2"));  // DRIFT_ERROR_INVALID_ARGUMENT
      EXPECT_THAT(host.held_pages(), ElementsAre(10, 11, 12));
      EXPECT_FALSE(log.matching("release_pages refused, nothing released").empty());
    }
  }
}

}  // namespace
}  // namespace drift::test
