#pragma once
// The request fields that ask for a structured output, OpenAI's and vLLM's: response_format
// ({"type": "json_object"} or {"type": "json_schema", "json_schema": {"schema": ...}}), guided_json,
// guided_regex, guided_choice, guided_grammar, vLLM's newer structured_outputs object ({"json"},
// {"regex"}, {"choice"}, {"grammar"}, {"json_object": true}) and llama.cpp's grammar (GBNF). At
// most one may be given. The grammar is compiled here, on the request's thread (through the
// process-wide cache): a schema, regex or grammar that cannot be compiled is a 400 naming the
// field and saying why.
#include <memory>

#include "core/grammar/structured_output.h"
#include "server/field_reader.h"

namespace drift::server {

// Null when the request asks for none.
std::shared_ptr<const grammar::StructuredOutput> read_structured_output(const FieldReader& body);

}  // namespace drift::server
