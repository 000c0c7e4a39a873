#include "core/tools/forced_tool_calls.h"

#include "core/error.h"
#include "core/grammar/tool_call_grammar.h"

namespace drift::tools {
namespace {

using Json = nlohmann::ordered_json;
using grammar::StructuredKind;

// The functions the reply may call, with their parameters (none given: an object of anything).
std::vector<std::pair<std::string, Json>> callable(const Json& tools, const ToolChoice& choice) {
  std::vector<std::pair<std::string, Json>> out;
  for (const Json& tool : tools) {
    const Json& function = tool["function"];
    const std::string name = function["name"];
    if (choice.mode == ToolChoice::Mode::Function && name != choice.function) continue;
    out.emplace_back(name, function.contains("parameters") ? function["parameters"] : Json{{"type", "object"}});
  }
  return out;
}

ForcedCalls shaped(grammar::ToolCallShape shape, std::string prefill = "") {
  return {std::move(prefill),
          grammar::make_structured_output(StructuredKind::ToolCalls, grammar::tool_call_shape_json(shape))};
}

// Syntaxes with special tokens between a function's name and its arguments: the name must be
// known before the reply starts.
ForcedCalls named_only(ToolCallFormat format, const std::vector<std::pair<std::string, Json>>& functions) {
  if (functions.size() != 1)
    throw DriftError(fmt::format(
        "this model's tool-call syntax ({}) puts special tokens between a function's name and its arguments, which "
        "no grammar can produce: name the function (tool_choice {{\"type\": \"function\", ...}}) or give one tool",
        tool_call_format_name(format)));
  const auto& [name, parameters] = functions[0];
  const std::string prefill = format == ToolCallFormat::MistralArgs
                                  ? "[TOOL_CALLS]" + name + "[ARGS]"
                                  : " to=functions." + name + "<|channel|>commentary json<|message|>";
  return {prefill, grammar::make_structured_output(StructuredKind::JsonSchema, parameters.dump())};
}

}  // namespace

ForcedCalls forced_tool_calls(ToolCallFormat format, const Json& tools, const ToolChoice& choice) {
  auto functions = callable(tools, choice);
  if (functions.empty()) throw DriftError(fmt::format("no tool is named '{}'", choice.function));
  const bool parallel = choice.parallel && choice.mode == ToolChoice::Mode::Required;
  switch (format) {
    case ToolCallFormat::Hermes:
      return shaped({"", "<tool_call>\n{\"name\": \"", "\", \"arguments\": ", "}\n</tool_call>", "\n", "", parallel,
                     std::move(functions)});
    case ToolCallFormat::Llama3Json:
      return shaped({"", "{\"name\": \"", "\", \"parameters\": ", "}", "; ", "", false, std::move(functions)});
    case ToolCallFormat::MistralList:
      return shaped({"[", "{\"name\": \"", "\", \"arguments\": ", "}", ", ", "]", parallel, std::move(functions)},
                    "[TOOL_CALLS]");
    case ToolCallFormat::MistralArgs:
    case ToolCallFormat::Harmony:
      return named_only(format, functions);
  }
  throw DriftError("unknown tool-call syntax");
}

}  // namespace drift::tools
