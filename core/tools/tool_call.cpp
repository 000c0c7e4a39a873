#include "core/tools/tool_call.h"

namespace drift::tools {

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Hermes:
      return "hermes";
    case ToolCallFormat::Llama3Json:
      return "llama3_json";
    case ToolCallFormat::MistralList:
      return "mistral";
    case ToolCallFormat::MistralArgs:
      return "mistral_args";
    case ToolCallFormat::Harmony:
      return "harmony";
  }
  return "?";
}

}  // namespace drift::tools
