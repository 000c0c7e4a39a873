#pragma once
// Tools for a chat template that prints none (SmolLM2's, for one): drift writes them into the
// conversation itself, in the Hermes conventions -- the functions listed in the system message
// (one is added when there is none) with how to call them, each assistant call written out as a
// <tool_call> block in its content, each tool result given back as a user turn in a
// <tool_response> block -- so the template renders plain messages and the reply is read as
// ToolCallFormat::Hermes.
#include <nlohmann/json.hpp>

namespace drift::tools {

// `messages` normalized (server/openai_request.h: arguments as objects), `tools` OpenAI's list or
// null (then only earlier calls and results are rewritten; a conversation without any comes back
// unchanged).
nlohmann::ordered_json describe_tools(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools);

}  // namespace drift::tools
