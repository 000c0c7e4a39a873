// Drafts under a grammar: nodes the grammar does not allow are cut with their subtrees, every
// kept node's row gets its own state's mask, and min_tokens never holds back the end a finished
// grammar leaves as the only choice.
#include <gtest/gtest.h>

#include <cmath>

#include "core/grammar/regex_grammar.h"
#include "core/speculation/grammar_drafts.h"

namespace drift {
namespace {

using grammar::GrammarAutomaton;

// Tokens: 0 "a", 1 "b", 2 "c", 3 end, 4 "ab".
std::shared_ptr<grammar::TokenConstraint> constraint() {
  std::vector<std::optional<std::string>> v = {"a", "b", "c", std::nullopt, "ab"};
  return std::make_shared<grammar::TokenConstraint>(
      grammar::regex_grammar("(ab)+c?"), std::make_shared<grammar::VocabularyTrie>(v), std::vector<int32_t>{3});
}

TEST(GrammarDrafts, NodesOutsideTheGrammarAreCutWithTheirSubtrees) {
  auto c = constraint();
  // root -> a(0) -> b(1) -> c(2) -> end(3); root -> b(4) -> a(5); root -> ab(6) -> a(7) -> a(8)
  const DraftTree tree({0, 1, 2, 3, 1, 0, 4, 0, 0}, {-1, 0, 1, 2, -1, 4, -1, 6, 7});
  const DraftTree cut = cut_to_grammar(tree, *c, c->start());
  EXPECT_EQ(cut.tokens, (std::vector<int32_t>{0, 1, 2, 3, 4, 0}));
  EXPECT_EQ(cut.parents, (std::vector<int32_t>{-1, 0, 1, 2, -1, 4}));
  const auto states = draft_states(*c, c->start(), tree);
  EXPECT_EQ(states[4], GrammarAutomaton::kDead);
  EXPECT_EQ(states[5], GrammarAutomaton::kDead);  // under a cut node
  EXPECT_EQ(states[8], GrammarAutomaton::kDead);
  EXPECT_EQ(states[1], states[6]);  // "a" "b" and "ab" reach the same state
}

TEST(GrammarDrafts, EachRowGetsTheMaskOfItsNodesStateAndTheEndIsNeverHeldBack) {
  auto c = constraint();
  const DraftTree tree({0, 1, 2}, {-1, 0, 1});  // a, b, c
  std::vector<RowSampling> rows(4);
  for (RowSampling& r : rows) r.adjustments = {{3, 0.0f, 1.0f, 1.0f, -INFINITY}};  // min_tokens holds the end
  add_grammar_masks(rows, row_states(*c, c->start(), tree), *c);
  auto allowed = [](const RowSampling& r) {
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < 5; ++id)
      if (r.allowed->allows(id)) ids.push_back(id);
    return ids;
  };
  EXPECT_EQ(allowed(rows[0]), (std::vector<int32_t>{0, 4}));        // root: a or ab
  EXPECT_EQ(allowed(rows[1]), (std::vector<int32_t>{1}));           // after a: b
  EXPECT_EQ(allowed(rows[2]), (std::vector<int32_t>{0, 2, 3, 4}));  // after ab: more, c, or the end
  EXPECT_EQ(allowed(rows[3]), (std::vector<int32_t>{3}));           // after abc: only the end
  EXPECT_TRUE(std::isinf(rows[2].adjustments[0].after));            // a choice remains: min_tokens holds
  EXPECT_EQ(rows[3].adjustments[0].after, 0.0f);                    // nothing else: the end is released
}

}  // namespace
}  // namespace drift
