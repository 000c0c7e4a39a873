#pragma once
// Reading a model's reply for tool calls, in the syntax its chat template taught it
// (tool_call.h). A call that does not parse completely (cut off by max_tokens, malformed JSON,
// arguments that are not an object) is no call: the reply stays text, as the model wrote it.
#include <string_view>

#include "core/tools/tool_call.h"

namespace drift::tools {

ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view text);

// The text that opens a call in this format, for streaming: text before it can go out as
// content at once. Empty for formats without one (Llama 3's JSON reply, harmony's channels).
std::string_view tool_call_marker(ToolCallFormat format);

}  // namespace drift::tools
