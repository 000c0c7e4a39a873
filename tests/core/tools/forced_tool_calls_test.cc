// tool_choice "required" / a named function: the grammar accepts exactly calls in the model's
// syntax to the allowed functions, with arguments valid under each function's schema, and what it
// accepts (after the prefill) parses back as those calls.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/grammar/grammar_automaton.h"
#include "core/tools/forced_tool_calls.h"
#include "core/tools/tool_call_parser.h"

namespace drift::tools {
namespace {

using Json = nlohmann::ordered_json;

Json weather_tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search_web",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])");
}

ToolChoice required(bool parallel = true) { return {ToolChoice::Mode::Required, "", parallel}; }
ToolChoice named(const std::string& function) { return {ToolChoice::Mode::Function, function, true}; }

bool accepts(const ForcedCalls& forced, const std::string& text) {
  return grammar::GrammarAutomaton(*forced.output->grammar).matches(text);
}

const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
    "\"celsius\"}}\n</tool_call>";
const std::string kSearch =
    "<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": \"news\"}}\n</tool_call>";

TEST(ForcedToolCallsTest, HermesAcceptsCallsToTheToolsWithValidArgumentsOnly) {
  const ForcedCalls forced = forced_tool_calls(ToolCallFormat::Hermes, weather_tools(), required());
  EXPECT_EQ(forced.prefill, "");
  EXPECT_TRUE(accepts(forced, kWeather));
  EXPECT_TRUE(accepts(forced, kWeather + "\n" + kSearch));  // parallel calls
  EXPECT_FALSE(accepts(forced, "Sure! " + kWeather));       // nothing but calls
  EXPECT_FALSE(accepts(forced, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(forced,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"celsius\"}}\n"
                       "</tool_call>"));  // city is required
  EXPECT_FALSE(accepts(forced,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", "
                       "\"unit\": \"kelvin\"}}\n</tool_call>"));
  const ParsedReply reply = parse_tool_calls(ToolCallFormat::Hermes, kWeather + "\n" + kSearch);
  ASSERT_EQ(reply.calls.size(), 2u);
  EXPECT_EQ(reply.calls[1].name, "search_web");

  const ForcedCalls one = forced_tool_calls(ToolCallFormat::Hermes, weather_tools(), required(false));
  EXPECT_TRUE(accepts(one, kWeather));
  EXPECT_FALSE(accepts(one, kWeather + "\n" + kSearch));
  const ForcedCalls search = forced_tool_calls(ToolCallFormat::Hermes, weather_tools(), named("search_web"));
  EXPECT_TRUE(accepts(search, kSearch));
  EXPECT_FALSE(accepts(search, kWeather));
}

TEST(ForcedToolCallsTest, EachSyntaxGetsItsOwnShapeAndPrefill) {
  const ForcedCalls llama = forced_tool_calls(ToolCallFormat::Llama3Json, weather_tools(), required());
  const std::string llama_call = R"({"name": "get_weather", "parameters": {"city": "Rome"}})";
  EXPECT_TRUE(accepts(llama, llama_call));
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::Llama3Json, llama_call).calls.size(), 1u);

  const ForcedCalls nemo = forced_tool_calls(ToolCallFormat::MistralList, weather_tools(), required());
  EXPECT_EQ(nemo.prefill, "[TOOL_CALLS]");
  const std::string nemo_calls =
      R"([{"name": "get_weather", "arguments": {"city": "Rome"}}, {"name": "search_web", "arguments": {"query": "q"}}])";
  EXPECT_TRUE(accepts(nemo, nemo_calls));
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::MistralList, nemo.prefill + nemo_calls).calls.size(), 2u);

  // Special tokens between name and arguments: the named function's opening is prefilled.
  const ForcedCalls small = forced_tool_calls(ToolCallFormat::MistralArgs, weather_tools(), named("get_weather"));
  EXPECT_EQ(small.prefill, "[TOOL_CALLS]get_weather[ARGS]");
  EXPECT_TRUE(accepts(small, R"({"city": "Rome"})"));
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::MistralArgs, small.prefill + R"({"city": "Rome"})").calls.size(), 1u);
  const ForcedCalls harmony = forced_tool_calls(ToolCallFormat::Harmony, weather_tools(), named("search_web"));
  EXPECT_TRUE(accepts(harmony, R"({"query": "q"})"));
  EXPECT_EQ(parse_tool_calls(ToolCallFormat::Harmony, harmony.prefill + R"({"query": "q"})").calls.size(), 1u);
  EXPECT_THROW(forced_tool_calls(ToolCallFormat::Harmony, weather_tools(), required()), DriftError);
}

TEST(ForcedToolCallsTest, ParametersThatCannotBeCompiledNameTheFunction) {
  Json tools = weather_tools();
  tools[1]["function"]["parameters"]["properties"]["query"]["minLength"] = "three";
  tools[1]["function"]["parameters"]["properties"]["count"] = {{"type", "integer"}, {"minimum", 1}};
  try {
    forced_tool_calls(ToolCallFormat::Hermes, tools, required());
    ADD_FAILURE() << "compiled";
  } catch (const grammar::GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("search_web"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace drift::tools
