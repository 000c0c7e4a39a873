// The automaton itself: ambiguity it keeps exact (several parses at once), the bound on how many
// parses one state may hold (a hostile regex ends its parse instead of stalling the engine), and
// flat stacks for right recursion.
#include <gtest/gtest.h>

#include "core/grammar/grammar_automaton.h"
#include "core/grammar/regex_grammar.h"

namespace drift::grammar {
namespace {

TEST(GrammarAutomatonTest, AmbiguousGrammarsMatchExactly) {
  GrammarAutomaton m(regex_grammar("(x|xx|xxx)*y"));
  EXPECT_TRUE(m.matches(std::string(200, 'x') + "y"));
  EXPECT_FALSE(m.matches(std::string(200, 'x')));
  EXPECT_LT(m.num_states(), 10u);  // the parses merge: one state per role, not per split
}

TEST(GrammarAutomatonTest, AParseHoldingTooManyStacksEndsInsteadOfGrowingWithEveryByte) {
  // ((x?){100}){100}: every split of the x's between the two levels is a separate parse.
  GrammarAutomaton m(regex_grammar("((x?){100}){100}"));
  StateId s = m.start();
  size_t consumed = 0;
  for (; consumed < 200 && s != GrammarAutomaton::kDead; ++consumed) s = m.advance(s, 'x');
  EXPECT_EQ(s, GrammarAutomaton::kDead);
  EXPECT_LT(consumed, 200u);
  EXPECT_LT(m.num_states(), 200u);
  EXPECT_TRUE(m.matches("xxxx"));  // short outputs are still parsed exactly
}

TEST(GrammarAutomatonTest, RightRecursionKeepsOneStatePerPosition) {
  GrammarAutomaton m(regex_grammar("[a-z]*"));
  StateId s = m.start();
  for (int i = 0; i < 10000; ++i) s = m.advance(s, 'q');
  EXPECT_TRUE(m.accepts(s));
  EXPECT_LE(m.num_states(), 3u);
}

}  // namespace
}  // namespace drift::grammar
