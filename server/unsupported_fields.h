#pragma once
// Request fields (OpenAI's and vLLM's) that would change the output but that DriftEngine does not
// implement. Each is accepted only at its no-op value (absent, null, the default, an empty list);
// anything else is a 400 naming the field, so a client never silently gets something other than
// what it asked for.
#include "server/field_reader.h"

namespace drift::server {

// `chat`: the body is a chat completion (add_special_tokens defaults to false there, as in vLLM).
void refuse_unsupported(const FieldReader& body, bool chat);

}  // namespace drift::server
