#pragma once
// StructuredOutput: what a request's output must match -- a JSON schema, any JSON object, a
// regex, one of a list of strings, or a GBNF grammar (vLLM's guided_json / json_object /
// guided_regex / guided_choice / guided_grammar, OpenAI's response_format) -- with its grammar
// compiled. make_structured_output compiles through a process-wide cache (the same schema sent
// again is not compiled again), so a server can refuse a bad schema on the request's own thread.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/grammar/grammar.h"

namespace drift::grammar {

// ToolCalls: function calls in a chat model's syntax (tool_choice required or named); its text is
// a grammar::ToolCallShape as JSON (tool_call_grammar.h).
enum class StructuredKind { JsonSchema, JsonObject, Regex, Choice, Grammar, ToolCalls };
const char* structured_kind_name(StructuredKind kind);  // "json_schema", "json_object", ...

struct StructuredOutput {
  StructuredKind kind = StructuredKind::JsonObject;
  std::string text;                  // the schema (JSON text), regex, GBNF or call shape; empty otherwise
  std::vector<std::string> choices;  // StructuredKind::Choice
  std::string key;                   // kind, text and choices in one string: equal keys, equal grammars
  std::shared_ptr<const Grammar> grammar;
  double compile_seconds = 0.0;  // 0 when the cache had it
};

// Throws GrammarError saying why the schema, regex, choice list or grammar cannot be compiled.
std::shared_ptr<const StructuredOutput> make_structured_output(StructuredKind kind, std::string text,
                                                               std::vector<std::string> choices = {});

}  // namespace drift::grammar
