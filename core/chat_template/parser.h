#pragma once
// The template parser: turns the lexer's tokens into statements with jinja2's grammar and
// operator precedence. Constructs this renderer does not implement (extends, block, include,
// import, recursive loops, ...) are refused here, before anything renders.
#include <string>

#include "core/chat_template/ast.h"

namespace drift::jinja {

// Throws JinjaError (kSyntax or kUnsupported) carrying the template line.
StmtList parse_template(const std::string& source);

}  // namespace drift::jinja
