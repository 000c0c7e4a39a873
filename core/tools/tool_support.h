#pragma once
// What a chat template does with tools, found by asking it: it renders a conversation with a
// tool and an assistant call to it, and the syntax that reads the call back out of the rendered
// reply is the one its model writes (every format's parser is tried). A template that prints no
// tools gets them from drift instead (tool_prompt.h), in the Hermes syntax.
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tools/tool_call.h"

namespace drift::tools {

struct ToolSupport {
  bool template_renders_tools = false;   // else drift describes them (tool_prompt.h)
  std::optional<ToolCallFormat> format;  // how replies are parsed; unset: tools are not served
  std::string unsupported;               // why, when format is unset
};

// Renders messages (with tools, or null for none) through the model's chat template.
using TemplateRender = std::function<std::string(const nlohmann::ordered_json& messages,
                                                 const nlohmann::ordered_json& tools, bool add_generation_prompt)>;

ToolSupport detect_tool_support(const TemplateRender& render);

}  // namespace drift::tools
