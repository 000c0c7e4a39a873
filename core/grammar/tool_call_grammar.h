#pragma once
// The grammar of function calls as a chat model writes them (tool_choice "required" or a named
// function): one call, or with parallel calls one or more, each
//     call_prefix NAME name_suffix ARGUMENTS call_suffix
// where NAME is one of the functions' names and ARGUMENTS matches that function's parameters
// (a JSON schema, compiled as json_schema_grammar does), calls separated by `separator`, all of
// them between `before` and `after`. The formats themselves (Hermes' <tool_call> JSON, Llama 3's
// JSON, Mistral's list) are core/tools/tool_call_constraint's; this knows only the shape.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/grammar/grammar.h"

namespace drift::grammar {

struct ToolCallShape {
  std::string before, call_prefix, name_suffix, call_suffix, separator, after;
  bool parallel = false;                                                  // one or more calls (else exactly one)
  std::vector<std::pair<std::string, nlohmann::ordered_json>> functions;  // name, parameters schema
};

// As JSON text and back: a structured output's text (StructuredKind::ToolCalls), hence its
// cache key.
std::string tool_call_shape_json(const ToolCallShape& shape);
ToolCallShape tool_call_shape_from_json(std::string_view text);

// Throws GrammarError naming the function (`functions[i]`) whose parameters cannot be compiled.
Grammar tool_call_grammar(const ToolCallShape& shape);

}  // namespace drift::grammar
