#include "core/tools/tool_call_parser.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "core/tools/json_extent.h"

namespace drift::tools {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kWhitespace = " \t\r\n";

std::string right_trimmed(std::string text) {
  const size_t last = text.find_last_not_of(kWhitespace);
  text.erase(last == std::string::npos ? 0 : last + 1);
  return text;
}

// The object or array at text[pos], parsed, its text, and where it ends.
struct JsonAt {
  Json value;
  std::string_view text;
  size_t end = 0;
};
std::optional<JsonAt> json_at(std::string_view text, size_t pos) {
  const auto end = json_value_end(text, pos);
  if (!end) return std::nullopt;
  const std::string_view written = text.substr(pos, *end - pos);
  Json value = Json::parse(written, nullptr, false);
  if (value.is_discarded()) return std::nullopt;
  return JsonAt{std::move(value), written, *end};
}

// Arguments as OpenAI sends them: an object's JSON text, as the model wrote it (`written`, when
// known; re-serialized otherwise). A string holding an object is accepted (some models quote
// it); anything else is no call.
std::optional<std::string> arguments_text(const Json& arguments, std::optional<std::string_view> written) {
  if (arguments.is_object()) return written ? std::string(*written) : arguments.dump();
  if (!arguments.is_string()) return std::nullopt;
  const std::string_view inner = arguments.get_ref<const std::string&>();
  const auto object = json_at(inner, skip_json_space(inner, 0));  // bounded depth, like the reply's own
  if (!object || !object->value.is_object() || skip_json_space(inner, object->end) != inner.size()) return std::nullopt;
  return std::string(object->text);
}

// {"name": "f", <key>: {...}} with key one of `argument_keys`; arguments left out mean none.
// `written`: the object's text.
std::optional<ToolCall> call_from_object(const Json& object, std::string_view written,
                                         std::initializer_list<const char*> argument_keys) {
  if (!object.is_object() || !object.contains("name") || !object["name"].is_string()) return std::nullopt;
  ToolCall call{object["name"].get<std::string>(), "{}"};
  if (call.name.empty()) return std::nullopt;
  for (const char* key : argument_keys) {
    if (!object.contains(key)) continue;
    auto arguments = arguments_text(object[key], member_text(written, key));
    if (!arguments) return std::nullopt;
    call.arguments = *arguments;
  }
  return call;
}

ParsedReply with_calls(std::string content, std::vector<ToolCall> calls) {
  return {right_trimmed(std::move(content)), std::move(calls)};
}

ParsedReply text_only(std::string_view text) { return {std::string(text), {}}; }

// <tool_call> {...} </tool_call>, any number, with text around them.
ParsedReply parse_hermes(std::string_view text) {
  constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
  std::string content;
  std::vector<ToolCall> calls;
  size_t pos = 0;
  for (;;) {
    const size_t at = text.find(open, pos);
    if (at == std::string_view::npos) break;
    const auto object = json_at(text, skip_json_space(text, at + open.size()));
    const auto call =
        object ? call_from_object(object->value, object->text, {"arguments", "parameters"}) : std::nullopt;
    if (!call) return calls.empty() ? text_only(text) : with_calls(content + std::string(text.substr(pos)), calls);
    content += text.substr(pos, at - pos);
    calls.push_back(*call);
    pos = skip_json_space(text, object->end);
    if (text.substr(pos).starts_with(close)) pos += close.size();
  }
  if (calls.empty()) return text_only(text);
  content += text.substr(pos);
  return with_calls(std::move(content), std::move(calls));
}

// The reply opens with one or more {"name": ..., "parameters": ...} objects (";"-separated),
// after an optional <|python_tag|>; text after them is content.
ParsedReply parse_llama3(std::string_view text) {
  constexpr std::string_view python_tag = "<|python_tag|>";
  size_t pos = skip_json_space(text, 0);
  if (text.substr(pos).starts_with(python_tag)) pos = skip_json_space(text, pos + python_tag.size());
  std::vector<ToolCall> calls;
  while (pos < text.size() && (calls.empty() || text[pos] == '{')) {
    const auto object = json_at(text, pos);
    const auto call =
        object ? call_from_object(object->value, object->text, {"parameters", "arguments"}) : std::nullopt;
    // A JSON answer that merely has a "name" is no call: one needs its arguments too.
    const bool has_arguments = call && (object->value.contains("parameters") || object->value.contains("arguments"));
    if (!has_arguments) return text_only(text);
    calls.push_back(*call);
    pos = skip_json_space(text, object->end);
    if (pos < text.size() && text[pos] == ';') pos = skip_json_space(text, pos + 1);
  }
  return calls.empty() ? text_only(text) : with_calls(std::string(text.substr(pos)), std::move(calls));
}

// [TOOL_CALLS][{"name": ..., "arguments": ...}, ...]
ParsedReply parse_mistral_list(std::string_view text) {
  constexpr std::string_view marker = "[TOOL_CALLS]";
  const size_t at = text.find(marker);
  if (at == std::string_view::npos) return text_only(text);
  const auto list = json_at(text, skip_json_space(text, at + marker.size()));
  if (!list || !list->value.is_array() || list->value.empty()) return text_only(text);
  const auto items = element_texts(list->text);
  if (!items || items->size() != list->value.size()) return text_only(text);
  std::vector<ToolCall> calls;
  for (size_t i = 0; i < items->size(); ++i) {
    auto call = call_from_object(list->value[i], (*items)[i], {"arguments", "parameters"});
    if (!call) return text_only(text);
    calls.push_back(std::move(*call));
  }
  return with_calls(std::string(text.substr(0, at)) + std::string(text.substr(list->end)), std::move(calls));
}

// [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}, repeated; [CALL_ID]id is optional.
ParsedReply parse_mistral_args(std::string_view text) {
  constexpr std::string_view marker = "[TOOL_CALLS]", call_id = "[CALL_ID]", args = "[ARGS]";
  const size_t first = text.find(marker);
  if (first == std::string_view::npos) return text_only(text);
  std::vector<ToolCall> calls;
  size_t pos = first;
  while (text.substr(pos).starts_with(marker)) {
    const size_t name_begin = pos + marker.size();
    const size_t args_at = text.find(args, name_begin);
    if (args_at == std::string_view::npos) return text_only(text);
    std::string_view name = text.substr(name_begin, args_at - name_begin);
    if (const size_t id_at = name.find(call_id); id_at != std::string_view::npos) name = name.substr(0, id_at);
    const auto arguments = json_at(text, skip_json_space(text, args_at + args.size()));
    const auto arguments_json = arguments ? arguments_text(arguments->value, arguments->text) : std::nullopt;
    if (name.empty() || name.find_first_of(" \n[]{}") != std::string_view::npos || !arguments_json)
      return text_only(text);
    calls.push_back({std::string(name), *arguments_json});
    pos = skip_json_space(text, arguments->end);
  }
  return with_calls(std::string(text.substr(0, first)) + std::string(text.substr(pos)), std::move(calls));
}

// gpt-oss: calls are messages addressed "to=functions.NAME", their arguments after <|message|>;
// the reply's text is its final channel (analysis and commentary text are not the answer).
ParsedReply parse_harmony(std::string_view text) {
  constexpr std::string_view recipient = "to=functions.", message = "<|message|>", final_channel = "<|channel|>final";
  std::vector<ToolCall> calls;
  // Each search starts after the last call's arguments: a recipient written inside them is text.
  for (size_t at = text.find(recipient); at != std::string_view::npos;) {
    const size_t name_begin = at + recipient.size();
    const size_t name_end = std::min(text.find_first_of(" \t\n<", name_begin), text.size());
    const size_t body = text.find(message, name_end);
    if (body == std::string_view::npos) return text_only(text);
    const auto arguments = json_at(text, skip_json_space(text, body + message.size()));
    const auto arguments_json = arguments ? arguments_text(arguments->value, arguments->text) : std::nullopt;
    if (name_end == name_begin || !arguments_json) return text_only(text);
    calls.push_back({std::string(text.substr(name_begin, name_end - name_begin)), *arguments_json});
    at = text.find(recipient, arguments->end);
  }
  if (calls.empty()) return text_only(text);
  std::string content;
  if (const size_t f = text.find(final_channel); f != std::string_view::npos) {
    const size_t begin = text.find(message, f);
    if (begin != std::string_view::npos) {
      const std::string_view rest = text.substr(begin + message.size());
      content = std::string(rest.substr(0, std::min(rest.find("<|"), rest.size())));
    }
  }
  return with_calls(std::move(content), std::move(calls));
}

}  // namespace

ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view text) {
  switch (format) {
    case ToolCallFormat::Hermes:
      return parse_hermes(text);
    case ToolCallFormat::Llama3Json:
      return parse_llama3(text);
    case ToolCallFormat::MistralList:
      return parse_mistral_list(text);
    case ToolCallFormat::MistralArgs:
      return parse_mistral_args(text);
    case ToolCallFormat::Harmony:
      return parse_harmony(text);
  }
  return text_only(text);
}

std::string_view tool_call_marker(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Hermes:
      return "<tool_call>";
    case ToolCallFormat::MistralList:
    case ToolCallFormat::MistralArgs:
      return "[TOOL_CALLS]";
    case ToolCallFormat::Llama3Json:
    case ToolCallFormat::Harmony:
      return "";
  }
  return "";
}

}  // namespace drift::tools
