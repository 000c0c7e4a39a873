#pragma once
// The chat request's function-calling fields, OpenAI's: `tools` (functions with a name, a
// description and a JSON-schema `parameters`), `tool_choice` ("none", "auto", "required" or
// {"type": "function", "function": {"name": ...}}) and `parallel_tool_calls`. Every error is a
// 400 naming the field (tools[1].function.name, tool_choice.function.name, ...).
#include <nlohmann/json.hpp>

#include "core/tools/forced_tool_calls.h"
#include "server/field_reader.h"

namespace drift::server {

struct ToolFields {
  nlohmann::ordered_json tools;  // null when none was given or tool_choice is "none"
  tools::ToolChoice choice;      // Mode::None when no tools apply
  bool active() const { return !tools.is_null(); }
  bool forced() const {
    return choice.mode == tools::ToolChoice::Mode::Required || choice.mode == tools::ToolChoice::Mode::Function;
  }
};

ToolFields read_tool_fields(const FieldReader& body);

// An assistant message's `tool_calls` (at `path`) as chat templates read them: each call
// {"id", "type": "function", "function": {"name", "arguments"}}, its arguments -- OpenAI sends
// them as JSON text -- turned into the object transformers' templates expect.
nlohmann::ordered_json template_tool_calls(const nlohmann::ordered_json& tool_calls, const std::string& path);

}  // namespace drift::server
