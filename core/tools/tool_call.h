#pragma once
// Function calling: the syntaxes chat models write their tool calls in, and a reply split into
// its text and its calls.
#include <string>
#include <vector>

namespace drift::tools {

// How a model writes a call (each with an example of one call):
//  - Hermes (Qwen 2.5 / 3, Hermes 2 / 3, and drift's own prompt for templates that know no
//    tools): <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//  - Llama3Json (Llama 3.1 / 3.2 / 3.3): the whole reply is {"name": "f", "parameters": {...}}
//  - MistralList (Mistral Nemo): [TOOL_CALLS][{"name": "f", "arguments": {...}}]
//  - MistralArgs (Mistral Small 3.2, Devstral): [TOOL_CALLS]f[ARGS]{...}
//  - Harmony (gpt-oss): to=functions.f<|channel|>commentary json<|message|>{...}<|call|>
enum class ToolCallFormat { Hermes, Llama3Json, MistralList, MistralArgs, Harmony };
const char* tool_call_format_name(ToolCallFormat format);  // "hermes", "llama3_json", ...

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, as text (OpenAI's function.arguments)
  bool operator==(const ToolCall&) const = default;
};

struct ParsedReply {
  // Without calls: the reply's text as it is. With calls: the text around them, its trailing
  // whitespace dropped ("" when nothing else was said).
  std::string content;
  std::vector<ToolCall> calls;
};

}  // namespace drift::tools
