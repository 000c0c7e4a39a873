#include "core/tools/tool_support.h"

#include <algorithm>
#include <exception>

#include "core/tools/tool_call_parser.h"

namespace drift::tools {
namespace {

using Json = nlohmann::ordered_json;

const ToolCall kProbeCall{"probe_function", R"({"probe_argument":"probe value"})"};

Json probe_tools() {
  return Json::parse(R"([{"type": "function", "function": {"name": "probe_function", "description": "A probe.",
      "parameters": {"type": "object", "properties": {"probe_argument": {"type": "string"}},
                     "required": ["probe_argument"]}}}])");
}

Json user_turn() { return Json::array({{{"role", "user"}, {"content", "Hello"}}}); }

Json with_probe_call(Json messages) {
  messages.push_back(
      {{"role", "assistant"},
       {"content", ""},
       {"tool_calls",
        Json::array({{{"id", "call00001"},
                      {"type", "function"},
                      {"function", {{"name", kProbeCall.name}, {"arguments", Json::parse(kProbeCall.arguments)}}}}})}});
  return messages;
}

// The reply as the template writes it: the conversation with the call, after what it shares
// with the prompt that asks for the reply.
std::string rendered_reply(const TemplateRender& render) {
  const std::string prompt = render(user_turn(), probe_tools(), true);
  const std::string full = render(with_probe_call(user_turn()), probe_tools(), false);
  const auto common = std::mismatch(prompt.begin(), prompt.end(), full.begin(), full.end()).second;
  return std::string(common, full.end());
}

bool reads_probe(ToolCallFormat format, const std::string& reply) {
  const ParsedReply parsed = parse_tool_calls(format, reply);
  return parsed.calls.size() == 1 && parsed.calls[0].name == kProbeCall.name &&
         Json::parse(parsed.calls[0].arguments) == Json::parse(kProbeCall.arguments);
}

// Whether the prompt changes with the tools. Some tool-use templates cannot render without them
// (they iterate `tools` unconditionally): those print them.
bool prints_tools(const TemplateRender& render) {
  const std::string with = render(user_turn(), probe_tools(), true);
  try {
    return with != render(user_turn(), nullptr, true);
  } catch (const std::exception&) {
    return true;
  }
}

}  // namespace

ToolSupport detect_tool_support(const TemplateRender& render) {
  ToolSupport support;
  try {
    support.template_renders_tools = prints_tools(render);
  } catch (const std::exception& e) {
    support.unsupported = std::string("the chat template fails when given tools: ") + e.what();
    return support;
  }
  if (!support.template_renders_tools) {
    support.format = ToolCallFormat::Hermes;
    return support;
  }
  std::string reply;
  try {
    reply = rendered_reply(render);
  } catch (const std::exception& e) {
    support.unsupported = std::string("the chat template fails to render an assistant's tool call: ") + e.what();
    return support;
  }
  for (ToolCallFormat format : {ToolCallFormat::Harmony, ToolCallFormat::MistralArgs, ToolCallFormat::MistralList,
                                ToolCallFormat::Hermes, ToolCallFormat::Llama3Json})
    if (reads_probe(format, reply)) {
      support.format = format;
      return support;
    }
  support.unsupported =
      "the chat template writes tool calls in a syntax drift does not read (it reads Hermes <tool_call> JSON, "
      "Llama 3 JSON, Mistral [TOOL_CALLS] and gpt-oss harmony)";
  return support;
}

}  // namespace drift::tools
