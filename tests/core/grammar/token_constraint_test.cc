// Token masks over real vocabularies: every mask equals brute force (each token's bytes run from
// the text so far through a separate automaton: allowed exactly when they keep the text a prefix
// of some sentence), end tokens exactly where the grammar may end; and Tokenizer::token_bytes,
// what the masks are built from, concatenates to the decoded text.
#include <gtest/gtest.h>

#include "core/grammar/json_schema_grammar.h"
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

TEST_P(VocabularyTest, MasksEqualBruteForceAlongAJsonDocument) {
  const auto tokenizer = load();
  const std::string schema = R"({"type": "object", "properties": {"name": {"type": "string"},
      "tags": {"type": "array", "items": {"enum": ["red", "green"]}, "maxItems": 3},
      "size": {"type": "number"}, "ok": {"type": "boolean"}}, "required": ["name", "ok"]})";
  const std::string document =
      "{\"name\": \"h\xC3\xA9llo \\\"x\\\"\", \"tags\": [\"red\",\"green\"], \"size\": -1.5e3, \"ok\": true}";
  const std::vector<int32_t> ends = tokenizer->special_tokens().eos_ids;
  TokenConstraint constraint(json_schema_grammar(std::string_view(schema)),
                             std::make_shared<VocabularyTrie>(vocabulary_bytes(*tokenizer)), ends);
  GrammarAutomaton reference(json_schema_grammar(std::string_view(schema)));
  ASSERT_TRUE(reference.matches(document));
  std::vector<std::optional<std::string>> bytes = vocabulary_bytes(*tokenizer);
  StateId state = constraint.start();
  const size_t stride = test::sanitized_build() ? 9 : 3;
  int64_t checked = 0;
  for (size_t n = 0; n <= document.size(); ++n) {
    if (n % stride == 0 || n == document.size()) {
      const std::string prefix = document.substr(0, n);
      const auto mask = constraint.mask(state);
      const bool whole = reference.matches(prefix);
      for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
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

}  // namespace
}  // namespace drift::grammar
