// Exploring a new grammar before requests ask for its masks (MaskExploration, MaskWorkers::explore,
// ConstraintRegistry): states come likeliest first -- the product of the shares of allowed tokens
// along the path, not breadth first -- up to the budget; workers compute exactly that many masks;
// a grammar nothing else holds is not kept alive or explored further; the registry's budget
// shrinks with the masks its grammars already hold.
#include <gtest/gtest.h>

#include <set>

#include "core/grammar/constraint_registry.h"
#include "core/grammar/json_schema_grammar.h"
#include "core/grammar/mask_exploration.h"
#include "core/grammar/regex_grammar.h"
#include "core/tokenizer/tokenizer.h"
#include "support/test_data.h"

namespace drift::grammar {
namespace {

// From the start: "b1"/"b2" lead to one state (2 of the 5 tokens), "a", "b" and "c" to one each;
// after "b1" only "x" goes on (all of its tokens), then "y".
std::shared_ptr<TokenConstraint> toy_constraint() {
  std::vector<std::optional<std::string>> v = {"a", "b", "b1", "b2", "c", "x", "1", "y"};
  return std::make_shared<TokenConstraint>(regex_grammar("a[0-9]|b[0-9]xy|c"), std::make_shared<VocabularyTrie>(v),
                                           std::vector<int32_t>{});
}

StateId take_and_explore(MaskExploration& exploration, TokenConstraint& c) {
  const std::optional<StateId> state = exploration.take();
  EXPECT_TRUE(state.has_value());
  if (!state) return GrammarAutomaton::kDead;
  const auto successors = c.weighted_successors(*state);
  exploration.explored(*state, successors);
  return *state;
}

TEST(MaskExplorationTest, LikeliestStatesComeFirstNotBreadthFirst) {
  auto c = toy_constraint();
  const StateId start = c->start();
  const StateId after_b1 = c->advance(start, 2);
  ASSERT_EQ(c->advance(start, 3), after_b1);
  MaskExploration exploration(c, 16);
  EXPECT_EQ(take_and_explore(exploration, *c), start);
  EXPECT_EQ(take_and_explore(exploration, *c), after_b1);                 // 2/5
  EXPECT_EQ(take_and_explore(exploration, *c), c->advance(after_b1, 5));  // 2/5 x 1, before the 1/5 ones
  std::set<StateId> rest;
  while (auto state = exploration.take()) {
    rest.insert(*state);
    exploration.explored(*state, c->weighted_successors(*state));
  }
  EXPECT_TRUE(exploration.finished());
  EXPECT_TRUE(rest.contains(c->advance(start, 0)));  // "a"
  EXPECT_TRUE(rest.contains(c->advance(start, 1)));  // "b"
  EXPECT_TRUE(rest.contains(c->advance(start, 4)));  // "c"
  EXPECT_EQ(exploration.taken(), 3 + rest.size());
}

// A loop's tokens (a string's characters) do not count against its exit: a state L that stays in
// itself on 1000 tokens and leaves on 1 reaches its exit E with L's whole likelihood, before a
// state Z the start reaches on 1 token in 11.
TEST(MaskExplorationTest, ALoopsExitComesWithTheLoopsLikelihood) {
  auto c = toy_constraint();
  const StateId start = c->start(), loop = 1001, exit = 1002, other = 1003;
  MaskExploration exploration(c, 16);
  ASSERT_EQ(exploration.take(), start);
  const std::pair<StateId, int32_t> from_start[] = {{loop, 10}, {other, 1}};
  exploration.explored(start, from_start);
  ASSERT_EQ(exploration.take(), loop);
  const std::pair<StateId, int32_t> from_loop[] = {{loop, 1000}, {exit, 1}};
  exploration.explored(loop, from_loop);
  EXPECT_EQ(exploration.take(), exit);
  EXPECT_EQ(exploration.take(), other);
  EXPECT_FALSE(exploration.take());  // the loop is not queued again
}

TEST(MaskExplorationTest, StopsAtItsBudgetAndIsNotFinishedWhileAStateIsComputed) {
  auto c = toy_constraint();
  MaskExploration exploration(c, 2);
  const std::optional<StateId> start = exploration.take();
  ASSERT_TRUE(start);
  EXPECT_FALSE(exploration.take());      // nothing known beyond the start yet
  EXPECT_FALSE(exploration.finished());  // the start's successors may come
  exploration.explored(*start, c->weighted_successors(*start));
  const std::optional<StateId> second = exploration.take();
  ASSERT_TRUE(second);
  EXPECT_FALSE(exploration.take());   // the budget: two states
  exploration.explored(*second, {});  // a state that failed to compute adds nothing
  EXPECT_TRUE(exploration.finished());
  EXPECT_FALSE(MaskExploration(c, 0).take());
}

const char* kSchema = R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer"}, "mood": {"enum": ["happy", "calm"]}}, "required": ["name", "age", "mood"]})";

std::shared_ptr<const VocabularyTrie> smollm2_vocabulary(const Tokenizer& tokenizer) {
  std::vector<std::optional<std::string>> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) bytes[id] = tokenizer.token_bytes(id);
  return std::make_shared<VocabularyTrie>(bytes);
}

TEST(MaskWorkersTest, ExploringComputesTheBudgetsMasksStartingFromTheStart) {
  const auto tokenizer = load_tokenizer(test::smollm2_model_dir());
  auto c = std::make_shared<TokenConstraint>(json_schema_grammar(std::string_view(kSchema)),
                                             smollm2_vocabulary(*tokenizer), tokenizer->special_tokens().eos_ids);
  MaskWorkers workers(2);
  workers.explore(c, 40);
  workers.wait_idle();
  EXPECT_EQ(c->cached_masks(), 40u);
  EXPECT_TRUE(c->has_mask(c->start()));
  EXPECT_TRUE(c->has_mask(c->successors(c->start()).front()));
  MaskWorkers none(0);
  auto unexplored = std::make_shared<TokenConstraint>(json_schema_grammar(std::string_view(kSchema)),
                                                      smollm2_vocabulary(*tokenizer), std::vector<int32_t>{});
  none.explore(unexplored, 40);
  none.wait_idle();
  EXPECT_EQ(unexplored->cached_masks(), 0u);
}

// Dropped at once, the grammar goes with the masks of the few states workers had already taken
// (its deleter counts them), not with the 1024 the exploration was given.
TEST(MaskWorkersTest, AGrammarNothingElseHoldsIsNotKeptAliveByItsExploration) {
  const auto tokenizer = load_tokenizer(test::smollm2_model_dir());
  size_t masks_when_dropped = 0;
  std::shared_ptr<TokenConstraint> c(
      new TokenConstraint(json_schema_grammar(std::string_view(kSchema)), smollm2_vocabulary(*tokenizer), {}),
      [&](TokenConstraint* dying) {
        masks_when_dropped = dying->cached_masks();
        delete dying;
      });
  const std::weak_ptr<TokenConstraint> held = c;
  MaskWorkers workers(2);
  workers.explore(c, 1024);
  c.reset();
  workers.wait_idle();  // returns: the exploration is dropped, not waited out
  EXPECT_TRUE(held.expired());
  EXPECT_LE(masks_when_dropped, 8u);
}

TEST(ConstraintRegistryTest, ANewGrammarIsExploredWithinTheBudgetLeft) {
  const auto tokenizer = load_tokenizer(test::smollm2_model_dir());
  const auto schema = make_structured_output(StructuredKind::JsonSchema, kSchema);
  ConstraintRegistry off(*tokenizer, tokenizer->vocab_size(), {2}, 1, 0);
  const auto unexplored = off.constraint(*schema);
  off.workers().wait_idle();
  EXPECT_EQ(unexplored->cached_masks(), 0u);

  ConstraintRegistry registry(*tokenizer, tokenizer->vocab_size(), {2}, 1, 32);
  const auto explored = registry.constraint(*schema);
  // Budgets for masks of other sizes: the per-grammar bytes, then the room the 32 masks leave --
  // counted from the moment they are promised, before the worker has computed any.
  constexpr size_t kMiB = size_t{1} << 20;
  for (int checked_after_the_worker : {0, 1}) {
    if (checked_after_the_worker) registry.workers().wait_idle();
    EXPECT_EQ(registry.exploration_budget(1024), 32u);  // the configured count
    EXPECT_EQ(registry.exploration_budget(4 * kMiB), ConstraintRegistry::kExploredBytes / (4 * kMiB));
    // 7.75 MiB masks: two fit the per-grammar bytes, but 32 of them leave 8 MiB of the registry's 256.
    EXPECT_EQ(registry.exploration_budget(7936 * 1024), 1u);
    EXPECT_EQ(registry.exploration_budget(8 * kMiB), 0u);  // 32 x 8 MiB fill it
  }
  EXPECT_EQ(explored->cached_masks(), 32u);
  EXPECT_EQ(registry.constraint(*schema), explored);  // compiled and explored once
  EXPECT_EQ(off.exploration_budget(1024), 0u);        // grammar_explored_masks = 0
  ConstraintRegistry no_workers(*tokenizer, tokenizer->vocab_size(), {2}, 0);
  EXPECT_EQ(no_workers.exploration_budget(1024), 0u);  // nothing promised where no worker would explore
}

}  // namespace
}  // namespace drift::grammar
