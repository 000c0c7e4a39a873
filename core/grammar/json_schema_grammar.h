#pragma once
// JSON Schema to grammar: the subset OpenAI's strict structured outputs and vLLM accept -- type
// (one or a list), properties / required / additionalProperties, enum, const, items with
// minItems / maxItems, anyOf (oneOf compiled as anyOf, as vLLM and xgrammar do), allOf of one
// schema, $ref into $defs / definitions / the root (recursion included), strings with
// minLength / maxLength / pattern and the formats date, time, date-time and uuid, nullable.
// A keyword that would constrain the value but is not compiled (minimum, uniqueItems, not, ...)
// is an error naming it and where it is: a schema is never silently loosened.
//
// The output is compact JSON with bounded whitespace (at most one space, or a newline and up to
// 20 indentation characters, between tokens), properties in the schema's order, and -- unless
// additionalProperties says otherwise -- no properties beyond those listed (strict mode; an
// object schema without properties takes any). Numbers have at most 16 integral, 16 fractional
// and 3 exponent digits, so a small model cannot run on forever inside one.
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/grammar/grammar.h"

namespace drift::grammar {

// Throws GrammarError naming the JSON pointer of what cannot be compiled.
Grammar json_schema_grammar(const nlohmann::ordered_json& schema);
Grammar json_schema_grammar(std::string_view schema_text);
// Any JSON object (response_format json_object).
Grammar json_object_grammar();

}  // namespace drift::grammar
