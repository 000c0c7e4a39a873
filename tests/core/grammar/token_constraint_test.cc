// Token masks over real vocabularies: every mask equals brute force (each token's bytes run from
// the text so far through a separate automaton: allowed exactly when they keep the text a prefix
// of some sentence), end tokens exactly where the grammar may end; and Tokenizer::token_bytes,
// what the masks are built from, concatenates to the decoded text. A state's successors are where
// its allowed tokens lead, and masks computed ahead on worker threads equal the ones computed
// where they are asked for.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/grammar/json_schema_grammar.h"
#include "core/grammar/mask_workers.h"
#include "core/grammar/regex_grammar.h"
#include "core/grammar/token_constraint.h"
#include "core/tokenizer/tokenizer.h"
#include "support/test_data.h"

namespace drift::grammar {
namespace {

std::vector<std::optional<std::string>> vocabulary_bytes(const Tokenizer& tokenizer) {
  std::vector<std::optional<std::string>> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) bytes[id] = tokenizer.token_bytes(id);
  return bytes;
}

std::string concat_bytes(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) out += tokenizer.token_bytes(id).value_or("<none>");
  return out;
}

class VocabularyTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<Tokenizer> load() const {
    const std::string which = GetParam();
    return load_tokenizer(which == "smollm2" ? test::smollm2_model_dir() : test::test_data_path(which));
  }
};

TEST_P(VocabularyTest, TokenBytesConcatenateToTheDecodedText) {
  const auto tokenizer = load();
  const std::vector<int32_t> anchor = tokenizer->encode("a");
  for (const char* text :
       {"Hello, world!", "{\"name\": \"h\xC3\xA9llo\", \"n\": [1, 2.5]}",
        "\xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x8E\x89 tab\there\n", "  leading spaces and trailing  "}) {
    std::vector<int32_t> ids = anchor;
    const std::vector<int32_t> body = tokenizer->encode(text);
    ids.insert(ids.end(), body.begin(), body.end());
    EXPECT_EQ(tokenizer->decode(anchor) + concat_bytes(*tokenizer, body), tokenizer->decode(ids)) << text;
  }
  for (int32_t eos : tokenizer->special_tokens().eos_ids) EXPECT_FALSE(tokenizer->token_bytes(eos)) << eos;
}

// Every `stride`-th prefix of `document` (and the whole): the mask equals brute force.
void expect_masks_equal_brute_force(const Tokenizer& tokenizer, const std::string& schema,
                                    const std::string& document) {
  const std::vector<int32_t> ends = tokenizer.special_tokens().eos_ids;
  TokenConstraint constraint(json_schema_grammar(std::string_view(schema)),
                             std::make_shared<VocabularyTrie>(vocabulary_bytes(tokenizer)), ends);
  GrammarAutomaton reference(json_schema_grammar(std::string_view(schema)));
  ASSERT_TRUE(reference.matches(document));
  std::vector<std::optional<std::string>> bytes = vocabulary_bytes(tokenizer);
  StateId state = constraint.start();
  const size_t stride = test::sanitized_build() ? 9 : 3;
  int64_t checked = 0;
  for (size_t n = 0; n <= document.size(); ++n) {
    if (n % stride == 0 || n == document.size()) {
      const std::string prefix = document.substr(0, n);
      const auto mask = constraint.mask(state);
      const bool whole = reference.matches(prefix);
      for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        bool expected = false;
        if (std::find(ends.begin(), ends.end(), id) != ends.end())
          expected = whole;
        else if (bytes[id] && !bytes[id]->empty())
          expected = reference.advance(reference.start(), prefix + *bytes[id]) != GrammarAutomaton::kDead;
        ASSERT_EQ(mask->allows(id), expected)
            << "after '" << prefix << "', token " << id << " '" << bytes[id].value_or("<none>") << "'";
        ++checked;
      }
    }
    if (n < document.size()) state = constraint.automaton().advance(state, static_cast<uint8_t>(document[n]));
  }
  EXPECT_GT(checked, 1000);
  EXPECT_TRUE(constraint.must_end(state));
}

TEST_P(VocabularyTest, MasksEqualBruteForceAlongAJsonDocument) {
  const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string"},
      "tags": {"type": "array", "items": {"enum": ["red", "green"]}, "maxItems": 3},
      "size": {"type": "number"}, "ok": {"type": "boolean"}}, "required": ["name", "ok"]})";
  expect_masks_equal_brute_force(
      *load(), schema,
      "{\"name\": \"h\xC3\xA9llo \\\"x\\\"\", \"tags\": [\"red\",\"green\"], \"size\": -1.5e3, \"ok\": true}");
}

// Strings with maxLength: the plain subtrees a mask allows whole (no taller than the characters
// left) and the ones it must walk, at every count of characters left.
TEST_P(VocabularyTest, MasksEqualBruteForceAlongBoundedStrings) {
  const std::string schema = R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 14},
      "b": {"type": "string", "minLength": 2, "maxLength": 4}}, "required": ["a", "b"]})";
  expect_masks_equal_brute_force(*load(), schema, "{\"a\": \"Hello, w\xC3\xB6rld!\", \"b\": \"x y\"}");
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, VocabularyTest,
                         ::testing::Values("models/stories260K", "smollm2", "tokenizers/llama2", "tokenizers/qwen3"));

TEST(TokenConstraintTest, AdvancingByTokensFollowsTheirBytesAndEndTokensKeepTheState) {
  std::vector<std::optional<std::string>> v = {"a", "ab", "b", std::nullopt, "c", "\xC3", "\xA9"};
  TokenConstraint c(regex_grammar("ab*(c|\xC3\xA9)"), std::make_shared<VocabularyTrie>(v), {3});
  StateId s = c.advance(c.start(), 1);  // "ab"
  ASSERT_NE(s, GrammarAutomaton::kDead);
  EXPECT_FALSE(c.allows(s, 3));
  EXPECT_FALSE(c.allows(s, 0));
  EXPECT_TRUE(c.allows(s, 5));   // half of é
  EXPECT_FALSE(c.allows(s, 6));  // the other half alone
  const StateId e = c.advance(c.advance(s, 5), 6);
  EXPECT_TRUE(c.must_end(e));
  EXPECT_EQ(c.advance(e, 3), e);
  EXPECT_EQ(c.advance(s, 3), GrammarAutomaton::kDead);  // an end token where the grammar cannot end
}

TEST(TokenConstraintTest, SuccessorsAreWhereTheAllowedTokensLeadMostReachedFirst) {
  std::vector<std::optional<std::string>> v = {"a", "b", "ab", "c", "x", "bb", "abc"};
  TokenConstraint c(regex_grammar("[ab]*c"), std::make_shared<VocabularyTrie>(v), {});
  const StateId start = c.start();
  std::set<StateId> expected;
  for (int32_t id = 0; id < static_cast<int32_t>(v.size()); ++id)
    if (c.allows(start, id)) expected.insert(c.advance(start, id));
  const std::vector<StateId> found = c.successors(start);
  EXPECT_EQ(std::set<StateId>(found.begin(), found.end()), expected);
  ASSERT_EQ(found.size(), 2u);                         // [ab]* again, and after the c
  EXPECT_EQ(found[0], c.advance(start, 0));            // a, b, ab, bb: the loop
  EXPECT_FALSE(c.automaton().can_continue(found[1]));  // c, abc: the end
  EXPECT_TRUE(c.successors(found[1]).empty());         // nothing follows the end
}

// One JSON schema over SmolLM2's vocabulary, along random outputs: a constraint whose masks mask
// workers compute ahead (its states' successors, queued as an engine step queues them) gives every
// mask the one computed on the asking thread gives, and the workers did compute masks before they
// were asked for.
TEST(MaskWorkersTest, MasksComputedAheadEqualTheOnesComputedWhenAsked) {
  const auto tokenizer = load_tokenizer(test::smollm2_model_dir());
  const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
      "age": {"type": "integer"}, "mood": {"enum": ["happy", "calm"]},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2}},
      "required": ["name", "age", "mood"]})";
  const auto vocabulary = std::make_shared<VocabularyTrie>(vocabulary_bytes(*tokenizer));
  const std::vector<int32_t> ends = tokenizer->special_tokens().eos_ids;
  TokenConstraint plain(json_schema_grammar(std::string_view(schema)), vocabulary, ends);
  auto ahead = std::make_shared<TokenConstraint>(json_schema_grammar(std::string_view(schema)), vocabulary, ends);
  MaskWorkers workers(3);
  std::mt19937 rng(5);
  int64_t steps = 0, ready_before_asked = 0;
  for (int output = 0; output < (test::sanitized_build() ? 1 : 3); ++output) {
    StateId a = plain.start(), b = ahead->start();
    for (int t = 0; t < 60 && !plain.must_end(a); ++t, ++steps) {
      workers.compute_now(ahead, std::span(&b, 1));
      if (t % 2 == 1) workers.wait_idle();  // every other step, the workers have had their time
      ready_before_asked += ahead->has_mask(b) ? 1 : 0;
      const auto expected = plain.mask(a);
      ASSERT_EQ(ahead->mask(b)->words, expected->words) << "output " << output << ", token " << t;
      workers.compute_ahead(ahead, ahead->successors(b));
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < tokenizer->vocab_size(); ++id)
        if (expected->allows(id) && std::find(ends.begin(), ends.end(), id) == ends.end()) allowed.push_back(id);
      ASSERT_FALSE(allowed.empty());
      const int32_t token = allowed[rng() % allowed.size()];
      a = plain.advance(a, token);
      b = ahead->advance(b, token);
    }
  }
  workers.wait_idle();
  EXPECT_GT(ready_before_asked, steps / 2);
  EXPECT_GT(ahead->cached_masks(), plain.cached_masks());  // successors never visited were computed too
}

TEST(MaskWorkersTest, NoneOnSmallMachinesAndAtMostEightOnLargeOnes) {
  EXPECT_EQ(default_mask_workers(1), 0);
  EXPECT_EQ(default_mask_workers(4), 0);
  EXPECT_EQ(default_mask_workers(8), 3);
  EXPECT_EQ(default_mask_workers(16), 7);
  EXPECT_EQ(default_mask_workers(128), 8);
  MaskWorkers none(0);
  auto c = std::make_shared<TokenConstraint>(
      regex_grammar("a+"), std::make_shared<VocabularyTrie>(std::vector<std::optional<std::string>>{"a"}),
      std::vector<int32_t>{});
  const StateId start = c->start();
  none.compute_now(c, std::span(&start, 1));
  none.wait_idle();
  EXPECT_FALSE(c->has_mask(start));  // nothing ran it
}

}  // namespace
}  // namespace drift::grammar
