#pragma once
// JinjaError: a failure while parsing or rendering a template, typed like the Python exception
// jinja2 would raise (UndefinedError, TypeError, ...) so that messages read like transformers'.
// Value operations throw it without a line; the evaluator attaches the line of the node being
// evaluated, and ChatTemplate turns it into a DriftError naming the template.
#include <stdexcept>
#include <string>

namespace drift::jinja {

enum class ErrorType {
  kSyntax,        // TemplateSyntaxError
  kUnsupported,   // a jinja2 construct this renderer does not implement
  kAssertion,     // TemplateAssertionError (an unknown filter or test outside a conditional)
  kUndefined,     // UndefinedError
  kType,          // TypeError
  kValue,         // ValueError
  kSecurity,      // SecurityError (the sandbox refusing a mutation or private attribute)
  kTemplate,      // TemplateError: raise_exception()
  kRuntime,       // TemplateRuntimeError
  kZeroDivision,  // ZeroDivisionError
  kOverflow,      // OverflowError
};

class JinjaError : public std::runtime_error {
 public:
  JinjaError(ErrorType type, const std::string& message, int line = 0)
      : std::runtime_error(message), type_(type), line_(line) {}
  ErrorType type() const { return type_; }
  int line() const { return line_; }
  // The innermost node that knows its line sets it; outer nodes leave it.
  void set_line_if_unset(int line) {
    if (line_ == 0) line_ = line;
  }

 private:
  ErrorType type_;
  int line_;
};

[[noreturn]] inline void raise(ErrorType type, const std::string& message) { throw JinjaError(type, message); }

// The Python exception class name ("UndefinedError", "TypeError", ...).
const char* error_type_name(ErrorType type);

}  // namespace drift::jinja
