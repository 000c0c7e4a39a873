// Tool calls read back out of replies, with the real chat templates as the reference: each
// template is asked how its model writes a call (detect_tool_support), and the calls of a
// conversation, rendered by the template exactly as transformers renders them
// (chat_template_reference_test), must parse back to the same names and arguments. Streaming
// gives the same content and calls whatever the pieces; malformed or cut-off calls stay text.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "core/chat_template/chat_template.h"
#include "core/chat_template/model_chat_template.h"
#include "core/tools/tool_call_parser.h"
#include "core/tools/tool_call_stream.h"
#include "core/tools/tool_prompt.h"
#include "core/tools/tool_support.h"
#include "support/test_data.h"

namespace drift::tools {
namespace {

using Json = nlohmann::ordered_json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ChatTemplate load(const std::string& name) {
  const std::string path = test::test_data_path("chat_templates/" + name + ".jinja");
  return ChatTemplate(read_file(path), path);
}

TemplateRender renderer(const ChatTemplate& tmpl) {
  return [&tmpl](const Json& messages, const Json& tools, bool add_generation_prompt) {
    ChatTemplateInputs inputs;
    inputs.messages = messages;
    inputs.tools = tools;
    inputs.add_generation_prompt = add_generation_prompt;
    inputs.bos_token = "<s>";
    inputs.eos_token = "</s>";
    return tmpl.render(inputs);
  };
}

Json weather_tools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "search_web", "description": "Search.",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])");
}

const std::vector<ToolCall> kTwoCalls = {{"get_weather", R"({"city":"Paris","unit":"celsius"})"},
                                         {"search_web", R"({"query":"Paris \"events\" {today}"})"}};

Json assistant_calling(const std::vector<ToolCall>& calls) {
  Json tool_calls = Json::array();
  for (size_t i = 0; i < calls.size(); ++i)
    tool_calls.push_back({{"id", "call0000" + std::to_string(i)},
                          {"type", "function"},
                          {"function", {{"name", calls[i].name}, {"arguments", Json::parse(calls[i].arguments)}}}});
  return {{"role", "assistant"}, {"content", ""}, {"tool_calls", tool_calls}};
}

// What the template writes for the assistant's reply making `calls`: the conversation with the
// reply, after what it shares with the prompt that asks for it.
std::string rendered_reply(const TemplateRender& render, const std::vector<ToolCall>& calls) {
  const Json user = Json::array({{{"role", "user"}, {"content", "Weather and events in Paris?"}}});
  Json full = user;
  full.push_back(assistant_calling(calls));
  const std::string prompt = render(user, weather_tools(), true);
  const std::string text = render(full, weather_tools(), false);
  const auto common = std::mismatch(prompt.begin(), prompt.end(), text.begin(), text.end()).second;
  return std::string(common, text.end());
}

void expect_calls(const std::vector<ToolCall>& got, const std::vector<ToolCall>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(Json::parse(got[i].arguments), Json::parse(want[i].arguments)) << got[i].arguments;
  }
}

struct TemplateCase {
  const char* name;
  ToolCallFormat format;
  bool parallel;  // the syntax writes several calls in one reply
};

class TemplateToolCalls : public testing::TestWithParam<TemplateCase> {};

TEST_P(TemplateToolCalls, DetectedSyntaxReadsTheTemplatesOwnCallsBack) {
  const ChatTemplate tmpl = load(GetParam().name);
  const ToolSupport support = detect_tool_support(renderer(tmpl));
  EXPECT_TRUE(support.template_renders_tools);
  ASSERT_TRUE(support.format) << support.unsupported;
  EXPECT_EQ(tool_call_format_name(*support.format), std::string(tool_call_format_name(GetParam().format)));
  const std::vector<ToolCall> calls = GetParam().parallel ? kTwoCalls : std::vector<ToolCall>{kTwoCalls.front()};
  const std::string reply = rendered_reply(renderer(tmpl), calls);
  SCOPED_TRACE(reply);
  expect_calls(parse_tool_calls(*support.format, reply).calls, calls);
}

INSTANTIATE_TEST_SUITE_P(
    ShippedTemplates, TemplateToolCalls,
    testing::Values(TemplateCase{"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::Hermes, true},
                    TemplateCase{"Qwen-Qwen3-0.6B", ToolCallFormat::Hermes, true},
                    TemplateCase{"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", ToolCallFormat::Hermes, true},
                    TemplateCase{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallFormat::Hermes, true},
                    TemplateCase{"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::Llama3Json, false},
                    TemplateCase{"meta-llama-Llama-3.2-3B-Instruct", ToolCallFormat::Llama3Json, false},
                    TemplateCase{"meta-llama-Llama-3.3-70B-Instruct", ToolCallFormat::Llama3Json, false},
                    TemplateCase{"mistralai-Mistral-Nemo-Instruct-2407", ToolCallFormat::MistralList, true},
                    TemplateCase{"Mistral-Small-3.2-24B-Instruct-2506", ToolCallFormat::MistralArgs, true},
                    TemplateCase{"unsloth-mistral-Devstral-Small-2507", ToolCallFormat::MistralArgs, true},
                    TemplateCase{"openai-gpt-oss-120b", ToolCallFormat::Harmony, false}),
    [](const testing::TestParamInfo<TemplateCase>& info) {
      std::string name = info.param.name;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(ToolSupportTest, ATemplateWithoutToolsGetsThemFromDriftInTheHermesSyntax) {
  auto model = load_model_chat_template(test::smollm2_model_dir());
  ASSERT_TRUE(model);
  const TemplateRender render = renderer(model->tmpl);
  const ToolSupport support = detect_tool_support(render);
  EXPECT_FALSE(support.template_renders_tools);
  ASSERT_EQ(support.format, ToolCallFormat::Hermes);
  // drift's own description: the tools in the system prompt, earlier calls as <tool_call> blocks
  // (which the Hermes parser reads back), tool results as user turns.
  Json messages = Json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}});
  messages.push_back(assistant_calling(kTwoCalls));
  messages.push_back({{"role", "tool"}, {"tool_call_id", "call00000"}, {"content", "22 C"}});
  const Json described = describe_tools(messages, weather_tools());
  ASSERT_EQ(described.size(), 4u);
  EXPECT_EQ(described[0]["role"], "system");
  EXPECT_NE(described[0]["content"].get<std::string>().find("\"get_weather\""), std::string::npos);
  expect_calls(parse_tool_calls(ToolCallFormat::Hermes, described[2]["content"].get<std::string>()).calls, kTwoCalls);
  EXPECT_EQ(described[3]["role"], "user");
  EXPECT_EQ(described[3]["content"], "<tool_response>\n22 C\n</tool_response>");
  EXPECT_NO_THROW(render(described, nullptr, true));
  // A conversation without tools or tool turns is left alone.
  const Json plain = Json::array({{{"role", "user"}, {"content", "Hi"}}});
  EXPECT_EQ(describe_tools(plain, nullptr), plain);
}

TEST(ToolCallParserTest, CallsThatDoNotParseCompletelyStayText) {
  for (const std::string& text : {
           std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par"),  // cut off
           std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": [1]}\n</tool_call>"),
           std::string("<tool_call>\n{\"arguments\": {}}\n</tool_call>"),  // no name
           std::string("<tool_call> not json </tool_call>"),
       })
    EXPECT_EQ(parse_tool_calls(ToolCallFormat::Hermes, text).content, text) << text;
  // Llama 3: a JSON reply that is not a call ({"name"} alone) is the answer, not a call.
  const std::string json_answer = R"({"name": "Ada Lovelace", "born": 1815})";
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::Llama3Json, json_answer).calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::MistralList, "[TOOL_CALLS][{\"name\": \"f\"").calls.empty());
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::MistralArgs, "[TOOL_CALLS]f[ARGS]{\"a\": ").calls.empty());
}

TEST(ToolCallParserTest, HostileRepliesStayTextOrKeepWhatParsed) {
  // Arguments nested past kMaxJsonDepth are no call (nlohmann would recurse that deep).
  const std::string deep = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100000, '[') +
                           std::string(100000, ']') + "}}\n</tool_call>";
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::Hermes, deep).calls.empty());
  const std::string quoted_deep =
      "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": " + std::string(100000, '[') +
      std::string(100000, ']') + "}\"}\n</tool_call>";
  EXPECT_TRUE(parse_tool_calls(ToolCallFormat::Hermes, quoted_deep).calls.empty());
  // A malformed second call keeps the first and all the text after it.
  const ParsedReply partly = parse_tool_calls(
      ToolCallFormat::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call> Note: <tool_call>{bad");
  ASSERT_EQ(partly.calls.size(), 1u);
  EXPECT_EQ(partly.content, " Note: <tool_call>{bad");
  // A recipient written inside a call's arguments is not another call.
  const ParsedReply harmony = parse_tool_calls(ToolCallFormat::Harmony,
                                               "<|channel|>commentary to=functions.send <|constrain|>json<|message|>"
                                               "{\"msg\": \"to=functions.x\"}");
  expect_calls(harmony.calls, {{"send", R"({"msg": "to=functions.x"})"}});
}

TEST(ToolCallParserTest, TextAroundCallsIsContentAndQuotedArgumentsAreRead) {
  const ParsedReply reply = parse_tool_calls(
      ToolCallFormat::Hermes,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}\n"
      "</tool_call>\n");
  EXPECT_EQ(reply.content, "Let me check.");
  expect_calls(reply.calls, {{"get_weather", R"({"city": "Oslo"})"}});
  const ParsedReply harmony =
      parse_tool_calls(ToolCallFormat::Harmony,
                       "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
                       "to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Rome\"}");
  EXPECT_EQ(harmony.content, "");
  expect_calls(harmony.calls, {{"get_weather", R"({"city": "Rome"})"}});
}

// Arguments are passed on as the model wrote them: numbers past 64 bits and long decimals keep
// their digits (a re-serialization would make them doubles), in every syntax, quoted or not.
TEST(ToolCallParserTest, ArgumentsKeepTheModelsTextDigitsIncluded) {
  const std::string args = R"({"id": 123456789012345678901234567890, "x": 0.10000000000000000000001, "s": "a}b"})";
  const std::string quoted = Json(args).dump();  // the object inside a JSON string
  const std::vector<std::pair<ToolCallFormat, std::string>> replies = {
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": " + args + "}\n</tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": " + quoted + "}\n</tool_call>"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"f\", \"parameters\": " + args + "}"},
      {ToolCallFormat::MistralList,
       "[TOOL_CALLS][{\"name\": \"g\", \"arguments\": {}}, {\"arguments\": " + args + ", \"name\": \"f\"}]"},
      {ToolCallFormat::MistralArgs, "[TOOL_CALLS]f[ARGS]" + args},
      {ToolCallFormat::Harmony, "<|channel|>commentary to=functions.f <|constrain|>json<|message|>" + args},
  };
  for (const auto& [format, text] : replies) {
    const ParsedReply reply = parse_tool_calls(format, text);
    ASSERT_FALSE(reply.calls.empty()) << text;
    EXPECT_EQ(reply.calls.back().name, "f") << text;
    EXPECT_EQ(reply.calls.back().arguments, args) << text;
  }  // A key spelled with escapes is the parser's to match: the later "arguments" wins, as it does
  // in the parsed object.
  const ParsedReply escaped =
      parse_tool_calls(ToolCallFormat::Hermes,
                       R"(<tool_call>{"name": "f", "arguments": {"a": 1}, "argu\u006dents": {"b": 2}}</tool_call>)");
  ASSERT_EQ(escaped.calls.size(), 1u);
  EXPECT_EQ(Json::parse(escaped.calls[0].arguments), Json::parse(R"({"b": 2})"));
}

// Streamed in pieces of every size, the content sent and the calls equal the whole reply's.
TEST(ToolCallStreamTest, PiecesOfAnySizeGiveTheWholeRepliesContentAndCalls) {
  const std::vector<std::pair<ToolCallFormat, std::string>> replies = {
      {ToolCallFormat::Hermes,
       "Checking <tool> tags <tool_call and more.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search_web\", \"arguments\": {\"query\": "
       "\"x\"}}\n</tool_call>"},
      {ToolCallFormat::Hermes, "No call here, just <tool_ and text."},
      {ToolCallFormat::MistralList, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"},
      {ToolCallFormat::Llama3Json, "The weather is fine."},
  };
  std::mt19937 rng(7);
  for (const auto& [format, text] : replies) {
    const ParsedReply whole = parse_tool_calls(format, text);
    for (int trial = 0; trial < 50; ++trial) {
      ToolCallStream stream(format);
      std::string content;
      for (size_t pos = 0; pos < text.size();) {
        const size_t n = std::min<size_t>(text.size() - pos, 1 + rng() % 7);
        content += stream.feed(std::string_view(text).substr(pos, n));
        pos += n;
      }
      const ParsedReply rest = stream.finish();
      EXPECT_EQ(content + rest.content, whole.content) << text;
      EXPECT_EQ(rest.calls, whole.calls) << text;
    }
  }
}

TEST(ToolCallStreamTest, TextBeforeACallGoesOutAtOnceAndTheCallIsHeld) {
  ToolCallStream stream(ToolCallFormat::Hermes);
  EXPECT_EQ(stream.feed("Sure, checking"), "Sure, checking");
  EXPECT_EQ(stream.feed(".\n<tool"), ".");
  EXPECT_EQ(stream.feed("_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>"), "");
  const ParsedReply rest = stream.finish();
  EXPECT_EQ(rest.content, "");
  expect_calls(rest.calls, {{"f", "{}"}});
  // A prefilled call (tool_choice required) sends nothing before the end.
  ToolCallStream forced(ToolCallFormat::MistralList, "[TOOL_CALLS]");
  EXPECT_EQ(forced.feed("[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]"), "");
  expect_calls(forced.finish().calls, {{"f", R"({"a": 1})"}});
}

}  // namespace
}  // namespace drift::tools
