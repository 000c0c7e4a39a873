#pragma once
// The global functions a chat template can call: jinja2's range, dict, namespace, cycler and
// joiner, and transformers' raise_exception and strftime_now.
#include "core/chat_template/evaluator.h"

namespace drift::jinja {

void add_globals(Scope& scope);

}  // namespace drift::jinja
