#pragma once
// tool_choice "required" or a named function: the reply must be calls, in the model's syntax,
// their arguments matching each function's parameters schema. Where the syntax opens a call
// with special tokens (Mistral's [TOOL_CALLS], gpt-oss' channel header) -- which no grammar over
// the vocabulary's text produces -- the opening is put at the end of the prompt instead, as the
// model would have written it, and the grammar constrains the rest.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/grammar/structured_output.h"
#include "core/tools/tool_call.h"

namespace drift::tools {

struct ToolChoice {
  enum class Mode { None, Auto, Required, Function };
  Mode mode = Mode::Auto;
  std::string function;  // Mode::Function: the one to call
  bool parallel = true;  // parallel_tool_calls: more than one call allowed
};

struct ForcedCalls {
  std::string prefill;  // appended to the rendered prompt (empty for most syntaxes)
  std::shared_ptr<const grammar::StructuredOutput> output;
};

// `tools`: OpenAI's list (validated). Throws grammar::GrammarError when a function's parameters
// cannot be compiled, DriftError when the syntax cannot force this choice (Mistral's [ARGS] and
// harmony need the function named, or a single tool).
ForcedCalls forced_tool_calls(ToolCallFormat format, const nlohmann::ordered_json& tools, const ToolChoice& choice);

}  // namespace drift::tools
