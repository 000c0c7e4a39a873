// The ngram draft provider as the engine sees it: the built libdrift_ngram.so, loaded with dlopen
// and driven through the C ABI by a fake host this test builds (settings from a map, sequences
// from a map, log lines recorded; every other service NULL). No engine library is linked: this
// is how a third-party plugin tests itself. Checks the drafts exactly (chain, tree, budget,
// n-gram bounds, depth), that only "out" fields and only `budget` entries are written, and that
// bad settings fail create with a message naming the key and the value.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "drift/plugin.h"

namespace {

using Tokens = std::vector<drift_token_t>;
using Setting = std::variant<int64_t, double, bool, std::string>;

// The host side: what the engine would answer, from plain maps.
struct FakeHost {
  std::map<std::string, Setting> settings;
  std::map<drift_seq_id_t, Tokens> sequences;
  std::vector<std::pair<int32_t, std::string>> logs;
  drift_model_info_t model{};
  drift_host_api_t api{};

  FakeHost() {
    model.struct_size = sizeof model;
    model.vocab_size = 1000;
    model.bos_token_id = -1;
    api.struct_size = sizeof api;
    api.abi_major = DRIFT_ABI_MAJOR;
    api.abi_minor = DRIFT_ABI_MINOR;
    api.ctx = this;
    api.log = [](void* ctx, int32_t level, const char* message) { self(ctx).logs.emplace_back(level, message); };
    api.get_setting_int = get<int64_t>;
    api.get_setting_double = get<double>;
    api.get_setting_bool = get<bool>;
    api.get_setting_string = get_string;
    api.model_info = [](void* ctx) -> const drift_model_info_t* { return &self(ctx).model; };
    api.sequence_tokens = sequence_tokens;
  }
  FakeHost(const FakeHost&) = delete;  // api.ctx points here
  FakeHost& operator=(const FakeHost&) = delete;

  static FakeHost& self(void* ctx) { return *static_cast<FakeHost*>(ctx); }

  template <typename T>
  static drift_status_t get(void* ctx, const char* key, T* out) {
    const auto it = self(ctx).settings.find(key);
    if (it == self(ctx).settings.end()) return DRIFT_ERROR_NOT_FOUND;
    const T* value = std::get_if<T>(&it->second);
    if (!value) return DRIFT_ERROR_INVALID_ARGUMENT;
    *out = *value;
    return DRIFT_OK;
  }

  static drift_status_t get_string(void* ctx, const char* key, char* buf, size_t cap, size_t* len) {
    std::string value;
    const drift_status_t status = get<std::string>(ctx, key, &value);
    if (status != DRIFT_OK) return status;
    *len = value.size();
    if (cap > 0) std::snprintf(buf, cap, "%s", value.c_str());
    return DRIFT_OK;
  }

  static drift_status_t sequence_tokens(void* ctx, drift_seq_id_t seq, const drift_token_t** tokens, int64_t* n) {
    const auto it = self(ctx).sequences.find(seq);
    if (it == self(ctx).sequences.end()) return DRIFT_ERROR_NOT_FOUND;
    *tokens = it->second.data();
    *n = static_cast<int64_t>(it->second.size());
    return DRIFT_OK;
  }

  size_t count_logs(int32_t level) const {
    size_t n = 0;
    for (const auto& [l, message] : logs) n += l == level;
    return n;
  }
};

// One sequence's draft tree in host-owned buffers, with guard entries past the budget that the
// plugin must leave alone.
constexpr drift_token_t kSentinel = -7777;
constexpr int32_t kGuard = 4;

struct Tree {
  Tree(drift_seq_id_t seq, int32_t budget)
      : tokens(static_cast<size_t>(budget + kGuard), kSentinel),
        parents(tokens.size(), kSentinel),
        probs(tokens.size(), -1.0f) {
    tree.struct_size = sizeof tree;
    tree.seq_id = seq;
    tree.budget = budget;
    tree.tokens = tokens.data();
    tree.parents = parents.data();
    tree.probs = probs.data();
    tree.status = DRIFT_OK;
  }
  Tree(const Tree&) = delete;  // tree points into the vectors
  Tree& operator=(const Tree&) = delete;

  Tokens drafted() const { return {tokens.begin(), tokens.begin() + tree.num_nodes}; }
  std::vector<int32_t> drafted_parents() const { return {parents.begin(), parents.begin() + tree.num_nodes}; }

  // "in" fields as set, nothing written past num_nodes (so never past the budget), no probs.
  void expect_only_outputs_written(drift_seq_id_t seq, int32_t budget) const {
    EXPECT_EQ(tree.struct_size, sizeof tree);
    EXPECT_EQ(tree.seq_id, seq);
    EXPECT_EQ(tree.budget, budget);
    EXPECT_EQ(tree.tokens, tokens.data());
    EXPECT_EQ(tree.parents, parents.data());
    EXPECT_EQ(tree.probs, probs.data());
    EXPECT_FALSE(tree.has_probs);
    ASSERT_GE(tree.num_nodes, 0);
    ASSERT_LE(tree.num_nodes, budget);
    for (size_t i = static_cast<size_t>(tree.num_nodes); i < tokens.size(); ++i) {
      EXPECT_EQ(tokens[i], kSentinel) << "tokens[" << i << "] written beyond the draft";
      EXPECT_EQ(parents[i], kSentinel) << "parents[" << i << "] written beyond the draft";
    }
    for (float p : probs) EXPECT_EQ(p, -1.0f);
  }

  // What the host demands of any tree: topological order and distinct sibling tokens.
  void expect_valid() const {
    std::set<std::pair<int32_t, drift_token_t>> siblings;
    for (int32_t i = 0; i < tree.num_nodes; ++i) {
      EXPECT_GE(parents[i], -1);
      EXPECT_LT(parents[i], i) << "node " << i << " is not in topological order";
      EXPECT_TRUE(siblings.emplace(parents[i], tokens[i]).second)
          << "node " << i << " repeats a sibling's token " << tokens[i];
    }
  }

  int32_t depth() const {
    std::vector<int32_t> depth(static_cast<size_t>(tree.num_nodes));
    int32_t deepest = 0;
    for (int32_t i = 0; i < tree.num_nodes; ++i) {
      depth[i] = parents[i] < 0 ? 1 : depth[parents[i]] + 1;
      deepest = std::max(deepest, depth[i]);
    }
    return deepest;
  }

  drift_draft_tree_t tree{};
  Tokens tokens;
  std::vector<int32_t> parents;
  std::vector<float> probs;
};

class NgramPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    library_ = dlopen(DRIFT_NGRAM_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    const auto get = reinterpret_cast<drift_plugin_get_fn>(dlsym(library_, DRIFT_PLUGIN_ENTRY_POINT));
    ASSERT_NE(get, nullptr) << "no " << DRIFT_PLUGIN_ENTRY_POINT << " in " << DRIFT_NGRAM_PLUGIN;
    plugin_ = get(&host_.api, DRIFT_ABI_VERSION);
    ASSERT_NE(plugin_, nullptr);
  }

  void TearDown() override {
    if (instance_) plugin_->destroy(instance_);
    if (library_) dlclose(library_);
  }

  // create with host_.settings (also passed as TOML text, as the engine does).
  drift_status_t create() {
    std::string toml;
    for (const auto& [key, value] : host_.settings)
      if (const auto* i = std::get_if<int64_t>(&value)) toml += key + " = " + std::to_string(*i) + "\n";
    return plugin_->create(&host_.api, toml.c_str(), &instance_);
  }

  void create_with(std::map<std::string, Setting> settings) {
    host_.settings = std::move(settings);
    ASSERT_EQ(create(), DRIFT_OK) << (host_.logs.empty() ? "" : host_.logs.back().second);
    ASSERT_NE(instance_, nullptr);
  }

  drift_status_t propose(const std::vector<Tree*>& trees) {
    std::vector<drift_draft_tree_t*> pointers;
    pointers.reserve(trees.size());
    for (Tree* t : trees) pointers.push_back(&t->tree);
    drift_step_t step{};
    step.struct_size = sizeof step;
    step.step = ++step_;
    return plugin_->on_propose(instance_, &step, pointers.data(), pointers.size());
  }

  // The draft for `tokens` as sequence 1, checked for what every draft must satisfy.
  Tree& draft(const Tokens& tokens, int32_t budget) {
    host_.sequences[1] = tokens;
    trees_.push_back(std::make_unique<Tree>(1, budget));
    Tree& t = *trees_.back();
    EXPECT_EQ(propose({&t}), DRIFT_OK);
    EXPECT_EQ(t.tree.status, DRIFT_OK);
    t.expect_only_outputs_written(1, budget);
    t.expect_valid();
    return t;
  }

  FakeHost host_;
  void* library_ = nullptr;
  const drift_plugin_t* plugin_ = nullptr;
  void* instance_ = nullptr;
  int64_t step_ = 0;
  std::vector<std::unique_ptr<Tree>> trees_;
};

using Parents = std::vector<int32_t>;

TEST_F(NgramPlugin, DescriptorIsADraftProviderNamedNgram) {
  EXPECT_EQ(plugin_->struct_size, sizeof(drift_plugin_t));
  EXPECT_EQ(plugin_->abi_major, static_cast<uint32_t>(DRIFT_ABI_MAJOR));
  EXPECT_EQ(plugin_->abi_minor, static_cast<uint32_t>(DRIFT_ABI_MINOR));
  EXPECT_STREQ(plugin_->name, "ngram");
  EXPECT_STREQ(plugin_->version, "1.0.0");
  EXPECT_EQ(plugin_->kinds, DRIFT_KIND_DRAFT_PROVIDER);
  EXPECT_NE(plugin_->create, nullptr);
  EXPECT_NE(plugin_->destroy, nullptr);
  EXPECT_NE(plugin_->on_propose, nullptr);
  EXPECT_EQ(plugin_->on_choose_kv_view, nullptr) << "not a verification policy";
  EXPECT_EQ(plugin_->on_pages_full, nullptr) << "not a cache manager";
  const auto get = reinterpret_cast<drift_plugin_get_fn>(dlsym(library_, DRIFT_PLUGIN_ENTRY_POINT));
  EXPECT_EQ(get(nullptr, DRIFT_ABI_VERSION), plugin_) << "the same static descriptor on every call";
}

TEST_F(NgramPlugin, ChainIsTheContinuationOfARepeatedPattern) {
  create_with({});
  // "1 2 3" occurred at the start; what followed it then is the draft, up to the sequence's end.
  const Tree& t = draft({1, 2, 3, 4, 5, 9, 1, 2, 3}, 8);
  EXPECT_EQ(t.drafted(), (Tokens{4, 5, 9, 1, 2, 3}));
  EXPECT_EQ(t.drafted_parents(), (Parents{-1, 0, 1, 2, 3, 4}));
}

// After the suffix "10 11": "12 13 99 ..." (most recent), "14 ..." and "12 13 10 ..." (oldest).
const Tokens kBranching = {10, 11, 12, 13, 10, 11, 14, 10, 11, 12, 13, 99, 10, 11};
// Their trie (max_matches 3, max_ngram 2) with a budget of 16: the most recent continuation
// first; the oldest shares "12 13" with it and branches below node 1.
const Tokens kBranchingTree = {12, 13, 99, 10, 11, 14, 10, 11, 12, 13, 99, 10, 11, 10, 11, 14};
const std::vector<int32_t> kBranchingParents = {-1, 0, 1, 2, 3, -1, 5, 6, 7, 8, 9, 10, 11, 1, 13, 14};

TEST_F(NgramPlugin, BudgetIsRespectedExactly) {
  create_with({});
  const Tokens tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2};
  for (int32_t budget : {1, 2, 5, 8}) {
    SCOPED_TRACE("chain, budget " + std::to_string(budget));
    const Tree& t = draft(tokens, budget);
    EXPECT_EQ(t.tree.num_nodes, budget);
    EXPECT_EQ(t.drafted(), Tokens(tokens.begin() + 2, tokens.begin() + 2 + budget));
  }
  // A tree is cut by the budget, not by depth: the first `budget` nodes of the full trie.
  plugin_->destroy(std::exchange(instance_, nullptr));
  create_with({{"max_matches", int64_t{3}}, {"max_ngram", int64_t{2}}});
  for (int32_t budget : {6, 14, 15}) {
    SCOPED_TRACE("tree, budget " + std::to_string(budget));
    const Tree& t = draft(kBranching, budget);
    EXPECT_EQ(t.drafted(), Tokens(kBranchingTree.begin(), kBranchingTree.begin() + budget));
  }
}

TEST_F(NgramPlugin, MinNgramIgnoresShorterMatches) {
  const Tokens tokens = {9, 4, 8, 7, 4};  // only a 1-token match: "4"
  create_with({});
  EXPECT_EQ(draft(tokens, 4).drafted(), (Tokens{8, 7, 4}));
  plugin_->destroy(std::exchange(instance_, nullptr));
  create_with({{"min_ngram", int64_t{2}}});
  EXPECT_EQ(draft(tokens, 4).tree.num_nodes, 0);
}

TEST_F(NgramPlugin, MaxNgramBoundsTheComparedSuffix) {
  // The 3-gram "1 2 3" at the start beats the more recent 1-gram "3" -- unless max_ngram is 1.
  const Tokens tokens = {1, 2, 3, 40, 41, 3, 50, 1, 2, 3};
  create_with({});
  EXPECT_EQ(draft(tokens, 2).drafted(), (Tokens{40, 41}));
  plugin_->destroy(std::exchange(instance_, nullptr));
  create_with({{"max_ngram", int64_t{1}}});
  EXPECT_EQ(draft(tokens, 2).drafted(), (Tokens{50, 1}));
}

TEST_F(NgramPlugin, DefaultsRankUpToThreeTokensThenRecency) {
  // "7 1 2 3" matches 4 tokens at the start, the later "8 1 2 3" only 3. By default (max_ngram
  // 3) both are 3-gram matches and the more recent wins; with max_ngram 4 the longer one does.
  const Tokens tokens = {7, 1, 2, 3, 10, 11, 8, 1, 2, 3, 20, 21, 7, 1, 2, 3};
  create_with({});
  const Tree& chain = draft(tokens, 3);
  EXPECT_EQ(chain.drafted(), (Tokens{20, 21, 7}));
  EXPECT_EQ(chain.drafted_parents(), (Parents{-1, 0, 1})) << "max_matches 1: a chain";
  plugin_->destroy(std::exchange(instance_, nullptr));
  create_with({{"max_ngram", int64_t{4}}});
  EXPECT_EQ(draft(tokens, 3).drafted(), (Tokens{10, 11, 8}));
}

TEST_F(NgramPlugin, SeveralMatchesMergeIntoATreeSharingPrefixes) {
  create_with({{"max_matches", int64_t{3}}, {"max_ngram", int64_t{2}}});
  const Tree& t = draft(kBranching, 16);  // draft() also checks: topological, distinct siblings
  EXPECT_EQ(t.drafted(), kBranchingTree);
  EXPECT_EQ(t.drafted_parents(), kBranchingParents);
}

TEST_F(NgramPlugin, MaxMatchesBoundsTheNumberOfMergedContinuations) {
  create_with({{"max_matches", int64_t{2}}, {"max_ngram", int64_t{2}}});
  const Tree& t = draft(kBranching, 16);
  EXPECT_EQ(t.tree.num_nodes, 13) << "the two most recent continuations: 5 + 8 nodes";
  EXPECT_EQ(t.drafted_parents()[5], -1);
}

TEST_F(NgramPlugin, MaxDepthBoundsEveryPath) {
  create_with({{"max_matches", int64_t{3}}, {"max_ngram", int64_t{2}}, {"max_depth", int64_t{2}}});
  const Tree& tree = draft(kBranching, 16);
  EXPECT_EQ(tree.drafted(), (Tokens{12, 13, 14, 10})) << "the oldest match adds nothing within depth 2";
  EXPECT_EQ(tree.drafted_parents(), (Parents{-1, 0, -1, 2}));
  EXPECT_EQ(tree.depth(), 2);
  plugin_->destroy(std::exchange(instance_, nullptr));
  create_with({{"max_depth", int64_t{3}}});
  const Tree& chain = draft({1, 2, 3, 4, 5, 6, 7, 8, 1, 2}, 8);
  EXPECT_EQ(chain.drafted(), (Tokens{3, 4, 5}));
}

TEST_F(NgramPlugin, NoMatchMeansNoDraft) {
  create_with({});
  EXPECT_EQ(draft({1, 2, 3, 4}, 8).tree.num_nodes, 0);
  EXPECT_EQ(draft({7}, 8).tree.num_nodes, 0);
  EXPECT_EQ(draft({}, 8).tree.num_nodes, 0);
}

TEST_F(NgramPlugin, EachTreeOfABatchGetsItsOwnSequencesDraft) {
  create_with({});
  host_.sequences[10] = {1, 2, 3, 1, 2};
  host_.sequences[20] = {5, 6, 5};
  Tree a(10, 4), b(20, 4);
  ASSERT_EQ(propose({&a, &b}), DRIFT_OK);
  EXPECT_EQ(a.drafted(), (Tokens{3, 1, 2}));
  EXPECT_EQ(b.drafted(), (Tokens{6, 5}));
  a.expect_only_outputs_written(10, 4);
  b.expect_only_outputs_written(20, 4);
}

TEST_F(NgramPlugin, UnreadableSequenceGetsNoDraftAndOneWarning) {
  create_with({});
  host_.sequences[1] = {4, 5, 4};
  for (int round = 0; round < 3; ++round) {
    Tree unknown(99, 4), known(1, 4);
    unknown.tree.num_nodes = 3;  // stale: the plugin must say 0
    ASSERT_EQ(propose({&unknown, &known}), DRIFT_OK) << "one sequence must not fail the batch";
    EXPECT_EQ(unknown.tree.num_nodes, 0);
    EXPECT_EQ(unknown.tree.status, DRIFT_OK) << "no draft, but the request keeps its provider";
    unknown.expect_only_outputs_written(99, 4);
    EXPECT_EQ(known.drafted(), (Tokens{5, 4}));
  }
  ASSERT_EQ(host_.count_logs(DRIFT_LOG_WARN), 1u) << "logged once, not once per step";
  EXPECT_NE(host_.logs.back().second.find("99"), std::string::npos) << host_.logs.back().second;
}

TEST_F(NgramPlugin, FollowsTheSequenceThroughARequestsLifecycle) {
  create_with({});
  // Stateless: the host keeps the tokens, so the request hooks are not needed (NULL = not
  // interested); they are called as the engine would when present.
  EXPECT_EQ(plugin_->on_request_start, nullptr);
  EXPECT_EQ(plugin_->on_accept, nullptr);
  EXPECT_EQ(plugin_->on_request_finish, nullptr);
  host_.sequences[1] = {5, 6, 7, 8, 5, 6};
  drift_request_info_t request{};
  request.struct_size = sizeof request;
  request.seq_id = 1;
  request.tokens = host_.sequences[1].data();
  request.num_tokens = request.num_prompt_tokens = 6;
  if (plugin_->on_request_start) {
    ASSERT_EQ(plugin_->on_request_start(instance_, &request), DRIFT_OK);
  }

  Tree first(1, 4);
  ASSERT_EQ(propose({&first}), DRIFT_OK);
  EXPECT_EQ(first.drafted(), (Tokens{7, 8, 5, 6}));
  // The target accepted "7" and then chose "9": the engine appends both, then calls on_accept.
  const Tokens committed = {7, 9};
  host_.sequences[1].insert(host_.sequences[1].end(), committed.begin(), committed.end());
  if (plugin_->on_accept) {
    ASSERT_EQ(plugin_->on_accept(instance_, 1, committed.data(), committed.size()), DRIFT_OK);
  }

  Tree second(1, 4);
  ASSERT_EQ(propose({&second}), DRIFT_OK);
  EXPECT_EQ(second.tree.num_nodes, 0) << "\"9\" never occurred before";
  host_.sequences[1].push_back(5);
  Tree third(1, 4);
  ASSERT_EQ(propose({&third}), DRIFT_OK);
  EXPECT_EQ(third.drafted(), (Tokens{6, 7, 9, 5})) << "the 1-gram \"5\", most recent occurrence";
  if (plugin_->on_request_finish) {
    ASSERT_EQ(plugin_->on_request_finish(instance_, 1, DRIFT_FINISH_STOP), DRIFT_OK);
  }
}

TEST_F(NgramPlugin, InvalidSettingsFailCreateNamingKeyAndValue) {
  struct Case {
    std::map<std::string, Setting> settings;
    std::vector<std::string> mentions;  // in the error line
  };
  const std::vector<Case> cases = {
      {{{"min_ngram", int64_t{0}}}, {"'min_ngram'", "0"}},
      {{{"max_ngram", int64_t{-2}}}, {"'max_ngram'", "-2"}},
      {{{"max_matches", int64_t{0}}}, {"'max_matches'", "0"}},
      {{{"max_depth", int64_t{-1}}}, {"'max_depth'", "-1"}},
      {{{"max_ngram", std::string("three")}}, {"'max_ngram'", "\"three\""}},
      {{{"max_matches", 1.5}}, {"'max_matches'", "= 1.5 "}},
      {{{"min_ngram", true}}, {"'min_ngram'", "true"}},
      {{{"min_ngram", int64_t{4}}}, {"'max_ngram'", "3", "'min_ngram'", "4"}},  // max below min
      {{{"min_ngram", int64_t{2}}, {"max_ngram", int64_t{1}}}, {"'max_ngram'", "1", "'min_ngram'", "2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mentions.front() + " = " + c.mentions[1]);
    host_.settings = c.settings;
    host_.logs.clear();
    EXPECT_NE(create(), DRIFT_OK);
    EXPECT_EQ(instance_, nullptr) << "a failing create stores nothing";
    ASSERT_EQ(host_.count_logs(DRIFT_LOG_ERROR), 1u);
    for (const std::string& word : c.mentions)
      EXPECT_NE(host_.logs.back().second.find(word), std::string::npos)
          << "'" << word << "' missing from: " << host_.logs.back().second;
  }
}

TEST_F(NgramPlugin, ValidSettingsAreAccepted) {
  create_with({{"min_ngram", int64_t{2}},
               {"max_ngram", int64_t{2}},
               {"max_matches", int64_t{4}},
               {"max_depth", int64_t{0}},
               {"unrelated", std::string("ignored")}});
  EXPECT_EQ(host_.count_logs(DRIFT_LOG_ERROR), 0u);
}

// Thousands of tokens per sequence and step: matching must stay linear in the length, however
// large max_ngram is. Both sequences are quadratic for a matcher that re-compares n tokens at
// every position for every n (a long run of one token; a suffix that almost matches everywhere).
TEST_F(NgramPlugin, LongSequencesStayLinear) {
  create_with({{"max_ngram", int64_t{1'000'000}}, {"max_matches", int64_t{4}}});
  constexpr size_t kLength = 200'000;
  Tokens run(kLength, 7);
  Tokens almost = run;
  almost.back() = 8;
  const auto started = std::chrono::steady_clock::now();
  const Tree& repeated = draft(run, 8);
  const Tree& unmatched = draft(almost, 8);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  // The four most recent (longest) matches continue with 1, 2, 3 and 4 sevens: one merged chain.
  EXPECT_EQ(repeated.drafted(), (Tokens{7, 7, 7, 7}));
  EXPECT_EQ(unmatched.tree.num_nodes, 0);
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 2000);
}

}  // namespace
