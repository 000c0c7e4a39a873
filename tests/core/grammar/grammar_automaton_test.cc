// The automaton itself: ambiguity it keeps exact (several parses at once), the bound on how many
// parses one state may hold (a hostile regex ends its parse instead of stalling the engine), and
// flat stacks for right recursion; and threads advancing one automaton at once see what one
// thread alone sees.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "core/grammar/grammar_automaton.h"
#include "core/grammar/json_schema_grammar.h"
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

// How many plain bytes a state takes in a row: a string's characters left, unbounded without a
// maxLength, none where plain bytes differ; past the cap, never more than the truth.
TEST(GrammarAutomatonTest, PlainRunsCountTheCharactersAStringHasLeft) {
  GrammarAutomaton bounded(json_schema_grammar(std::string_view(R"({"type": "string", "maxLength": 5})")));
  StateId s = bounded.advance(bounded.start(), '"');
  EXPECT_EQ(bounded.plain_run(s), 5);
  EXPECT_EQ(bounded.plain_run(bounded.advance(s, "ab")), 3);
  EXPECT_EQ(bounded.plain_run(bounded.advance(s, "abcde")), 0);
  EXPECT_EQ(bounded.plain_run(bounded.start()), 0);  // only the quote
  GrammarAutomaton unbounded(json_schema_grammar(std::string_view(R"({"type": "string"})")));
  EXPECT_EQ(unbounded.plain_run(unbounded.advance(unbounded.start(), '"')), GrammarAutomaton::kMaxPlainRun);
  GrammarAutomaton letters(regex_grammar("[a-z]*"));
  EXPECT_EQ(letters.plain_run(letters.start()), 0);  // a digit is plain too, and leaves it
  GrammarAutomaton long_string(json_schema_grammar(std::string_view(R"({"type": "string", "maxLength": 600})")));
  const StateId open = long_string.advance(long_string.start(), '"');
  EXPECT_LE(long_string.plain_run(open), GrammarAutomaton::kMaxPlainRun);
  EXPECT_LE(long_string.plain_run(long_string.advance(open, std::string(300, 'x'))), 300);
  EXPECT_EQ(long_string.plain_run(long_string.advance(open, std::string(590, 'x'))), 10);
}

// Random byte strings over JSON's alphabet, each thread its own, through one shared automaton: at
// every prefix, whether it is alive, accepting and can continue equals a private automaton's
// answer (states are made concurrently, so their numbers differ; their meaning must not).
TEST(GrammarAutomatonTest, ThreadsAdvancingOneAutomatonSeeWhatOneThreadSees) {
  const char* schema = R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 5},
      "b": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"]})";
  GrammarAutomaton shared(json_schema_grammar(std::string_view(schema)));
  const std::string alphabet = "{}[]\",: ab01-9e.\\\n";
  constexpr int kThreads = 4;
  std::vector<std::vector<uint8_t>> seen(kThreads), expected(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      GrammarAutomaton own(json_schema_grammar(std::string_view(schema)));
      std::mt19937 rng(static_cast<uint32_t>(t));
      for (int text = 0; text < 1000; ++text) {
        // Mostly a valid start, so the walk goes deep before it dies.
        std::string bytes = "{\"a\": \"";
        for (int i = 0; i < 24; ++i) bytes.push_back(alphabet[rng() % alphabet.size()]);
        StateId s = shared.start(), o = own.start();
        for (char c : bytes) {
          s = shared.advance(s, static_cast<uint8_t>(c));
          o = own.advance(o, static_cast<uint8_t>(c));
          const auto code = [](GrammarAutomaton& m, StateId x) {
            return static_cast<uint8_t>((x == GrammarAutomaton::kDead) | m.accepts(x) << 1 | m.can_continue(x) << 2);
          };
          seen[t].push_back(code(shared, s));
          expected[t].push_back(code(own, o));
        }
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(seen[t], expected[t]) << "thread " << t;
  EXPECT_GT(shared.num_states(), 20u);
}

}  // namespace
}  // namespace drift::grammar
