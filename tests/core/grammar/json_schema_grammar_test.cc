// JSON Schema to grammar: accept / reject against python-jsonschema's verdicts on generated
// schemas and strings (tests/data/grammar/json_schema_cases.json, tools/grammar/json_schema_cases.py),
// and the compiler's own promises (errors that name the keyword, recursion, strict objects).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/grammar/grammar_automaton.h"
#include "core/grammar/json_schema_grammar.h"
#include "support/test_data.h"

namespace drift::grammar {
namespace {

using Json = nlohmann::ordered_json;

bool matches(const Json& schema, const std::string& text) {
  GrammarAutomaton automaton(json_schema_grammar(schema));
  return automaton.matches(text);
}

TEST(JsonSchemaGrammarTest, AcceptsExactlyWhatJsonschemaValidatesOnGeneratedCases) {
  std::ifstream in(test::test_data_path("grammar/json_schema_cases.json"));
  ASSERT_TRUE(in) << "missing grammar/json_schema_cases.json";
  const Json data = Json::parse(in);
  int64_t strings = 0, valid = 0;
  for (const Json& c : data["cases"]) {
    GrammarAutomaton automaton(json_schema_grammar(c["schema"]));
    for (const Json& s : c["strings"]) {
      const auto text = s["text"].get<std::string>();
      const bool expected = s["valid"].get<bool>();
      EXPECT_EQ(automaton.matches(text), expected) << "schema " << c["schema"].dump() << "\ntext " << text;
      ++strings;
      valid += expected ? 1 : 0;
    }
  }
  EXPECT_GT(strings, 5000);
  EXPECT_GT(valid, 1000);
  EXPECT_GT(strings - valid, 1000);
}

TEST(JsonSchemaGrammarTest, ObjectsKeepTheSchemasPropertyOrderAndRequireWhatIsRequired) {
  const Json schema = Json::parse(R"({"type": "object", "properties": {"b": {"type": "integer"},
      "a": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["a"]})");
  EXPECT_TRUE(matches(schema, R"({"b": 1, "a": "x", "c": true})"));
  EXPECT_TRUE(matches(schema, R"({"a": "x"})"));
  EXPECT_TRUE(matches(schema, R"({"a":"x","c":false})"));
  EXPECT_FALSE(matches(schema, R"({"a": "x", "b": 1})"));  // out of order
  EXPECT_FALSE(matches(schema, R"({"b": 1})"));            // a is required
  EXPECT_FALSE(matches(schema, R"({"a": "x", "d": 1})"));  // strict: nothing unlisted
  EXPECT_FALSE(matches(schema, R"({"a": "x",})"));
}

TEST(JsonSchemaGrammarTest, AdditionalPropertiesAllowExtraMembersOfTheirSchema) {
  const Json schema = Json::parse(R"({"type": "object", "properties": {"a": {"type": "integer"}},
      "required": ["a"], "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(matches(schema, R"({"a": 1, "x": "y", "z": ""})"));
  EXPECT_FALSE(matches(schema, R"({"a": 1, "x": 2})"));
  EXPECT_TRUE(matches(Json::parse(R"({"type": "object"})"), R"({"any": [1, {"deep": null}]})"));
}

TEST(JsonSchemaGrammarTest, RecursiveReferencesCompileAndNest) {
  const Json schema = Json::parse(R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v", "kids"]}}, "$ref": "#/$defs/node"})");
  EXPECT_TRUE(matches(schema, R"({"v": 1, "kids": [{"v": 2, "kids": []}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"));
  EXPECT_FALSE(matches(schema, R"({"v": 1, "kids": [{"v": 2}]})"));
  const Json list =
      Json::parse(R"({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
      "required": ["next"]})");
  EXPECT_TRUE(matches(list, R"({"next": {"next": {"next": null}}})"));
}

TEST(JsonSchemaGrammarTest, WhitespaceAndNumbersAreBounded) {
  const Json schema = Json::parse(R"({"type": "array", "items": {"type": "number"}})");
  EXPECT_TRUE(matches(schema, "[1, 2.5e-3,\n    -0.25]"));
  EXPECT_FALSE(matches(schema, "[1,  2]"));              // two spaces
  EXPECT_FALSE(matches(schema, "[01]"));                 // a leading zero
  EXPECT_TRUE(matches(schema, "[1234567890123456]"));    // 16 digits
  EXPECT_FALSE(matches(schema, "[12345678901234567]"));  // 17
  EXPECT_FALSE(matches(schema, "[1" + std::string(30, ' ') + "]"));
}

TEST(JsonSchemaGrammarTest, PatternStringsNeverHoldRawQuotesOrControlCharacters) {
  const Json schema = Json::parse(R"({"type": "string", "pattern": "^.+$"})");
  EXPECT_TRUE(matches(schema, R"("any text é")"));
  EXPECT_FALSE(matches(schema, R"("a"b")"));
  EXPECT_FALSE(matches(schema, "\"a\tb\""));
}

TEST(JsonSchemaGrammarTest, UnsupportedKeywordsAreErrorsNamingKeywordAndPlace) {
  auto error_of = [](const char* text) -> std::string {
    try {
      json_schema_grammar(std::string_view(text));
    } catch (const GrammarError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}})")
                .find("'/properties/age': the keyword 'minimum' is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("names nothing"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "strng"})").find("unknown type 'strng'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "(a"})").find("/pattern"), std::string::npos);
  EXPECT_NE(error_of("{not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "array", "minItems": 3, "maxItems": 1})").find("minItems exceeds maxItems"),
            std::string::npos);
}

TEST(JsonSchemaGrammarTest, JsonObjectTakesAnyObjectAndNothingElse) {
  GrammarAutomaton any(json_object_grammar());
  EXPECT_TRUE(any.matches(R"({"a": [1, 2, {"b": null}], "c": "d"})"));
  EXPECT_TRUE(any.matches("{}"));
  EXPECT_FALSE(any.matches("[]"));
  EXPECT_FALSE(any.matches(R"({"a": 1} x)"));
  EXPECT_FALSE(any.matches(R"({"a": tru})"));
}

}  // namespace
}  // namespace drift::grammar
