#include "core/chat_template/jinja_error.h"

namespace drift::jinja {

const char* error_type_name(ErrorType type) {
  switch (type) {
    case ErrorType::kSyntax:
      return "TemplateSyntaxError";
    case ErrorType::kUnsupported:
      return "unsupported";
    case ErrorType::kAssertion:
      return "TemplateAssertionError";
    case ErrorType::kUndefined:
      return "UndefinedError";
    case ErrorType::kType:
      return "TypeError";
    case ErrorType::kValue:
      return "ValueError";
    case ErrorType::kSecurity:
      return "SecurityError";
    case ErrorType::kTemplate:
      return "TemplateError";
    case ErrorType::kRuntime:
      return "TemplateRuntimeError";
    case ErrorType::kZeroDivision:
      return "ZeroDivisionError";
    case ErrorType::kOverflow:
      return "OverflowError";
  }
  return "Error";
}

}  // namespace drift::jinja
