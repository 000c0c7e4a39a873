#include "core/tools/tool_prompt.h"

#include <string>

namespace drift::tools {
namespace {

using Json = nlohmann::ordered_json;

std::string tools_instructions(const Json& tools) {
  std::string text =
      "You can call functions to answer the user. The functions are listed, one JSON signature per line, "
      "between <tools> and </tools>:\n<tools>\n";
  for (const Json& tool : tools) text += tool.dump() + "\n";
  text +=
      "</tools>\nTo call a function, reply with a JSON object holding its name and arguments between "
      "<tool_call> and </tool_call>:\n<tool_call>\n{\"name\": <function name>, \"arguments\": <arguments as a JSON "
      "object>}\n</tool_call>";
  return text;
}

std::string content_of(const Json& message) {
  const auto it = message.find("content");
  return it != message.end() && it->is_string() ? it->get<std::string>() : "";
}

// An assistant message's calls, written as the model would have written them.
std::string written_calls(const Json& message) {
  std::string text = content_of(message);
  for (const Json& call : message["tool_calls"]) {
    const Json& function = call.contains("function") ? call["function"] : call;
    const Json object = {{"name", function.value("name", "")},
                         {"arguments", function.value("arguments", Json::object())}};
    if (!text.empty()) text += "\n";
    text += "<tool_call>\n" + object.dump() + "\n</tool_call>";
  }
  return text;
}

bool has_tool_turns(const Json& messages) {
  for (const Json& message : messages)
    if (message.value("role", "") == "tool" || message.contains("tool_calls")) return true;
  return false;
}

}  // namespace

Json describe_tools(const Json& messages, const Json& tools) {
  const bool given = tools.is_array() && !tools.empty();
  if (!given && !has_tool_turns(messages)) return messages;
  Json out = Json::array();
  const std::string instructions = given ? tools_instructions(tools) : "";
  const bool has_system = given && !messages.empty() && messages[0].value("role", "") == "system";
  if (given && !has_system) out.push_back({{"role", "system"}, {"content", instructions}});
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& message = messages[i];
    const std::string role = message.value("role", "");
    if (i == 0 && has_system) {
      out.push_back({{"role", "system"}, {"content", content_of(message) + "\n\n" + instructions}});
    } else if (role == "assistant" && message.contains("tool_calls") && message["tool_calls"].is_array()) {
      out.push_back({{"role", "assistant"}, {"content", written_calls(message)}});
    } else if (role == "tool") {
      out.push_back({{"role", "user"}, {"content", "<tool_response>\n" + content_of(message) + "\n</tool_response>"}});
    } else {
      out.push_back(message);
    }
  }
  return out;
}

}  // namespace drift::tools
