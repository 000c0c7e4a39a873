// ChatTemplate: parses once, renders per request. render() prepares the inputs the way
// transformers' apply_chat_template does before it calls jinja2 (message keys whose value is
// None dropped, reasoning fields aliased, tools and documents passed as None when absent), then
// runs the evaluator; engine errors become DriftErrors naming the template and line.
#include "core/chat_template/chat_template.h"

#include <fmt/format.h>

#include "core/chat_template/evaluator.h"
#include "core/chat_template/globals.h"
#include "core/chat_template/json_value.h"
#include "core/chat_template/parser.h"
#include "core/error.h"

namespace drift {
namespace {

using jinja::Dict;
using jinja::Value;

[[noreturn]] void rethrow(const std::string& name, const jinja::JinjaError& e) {
  if (e.type() == jinja::ErrorType::kUnsupported) throw DriftError(fmt::format("chat template {}: {}", name, e.what()));
  throw DriftError(
      fmt::format("chat template {}, line {}: {}: {}", name, e.line(), jinja::error_type_name(e.type()), e.what()));
}

// transformers' _alias_reasoning_fields: the first non-None of reasoning_content / thinking /
// reasoning is also offered as "thinking" (first key) and "reasoning_content".
Value alias_reasoning(const Dict& message) {
  const Value* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    const Value* v = message.find(std::string_view(key));
    if (v && !v->is_none()) {
      reasoning = v;
      break;
    }
  }
  if (!reasoning) return Value::dict(message);
  Dict out;
  out.set(Value::string("thinking"), *reasoning);
  for (const auto& [key, value] : message.entries()) out.set(key, value);
  out.set(Value::string("reasoning_content"), *reasoning);
  return Value::dict(std::move(out));
}

// _normalize_chat_messages (None-valued keys dropped) followed by the aliasing.
Value prepare_messages(const nlohmann::ordered_json& messages) {
  if (!messages.is_array()) fail("chat template inputs: messages must be an array, got {}", messages.type_name());
  jinja::ValueList out;
  for (const auto& message : messages) {
    if (!message.is_object()) fail("chat template inputs: each message must be an object, got {}", message.dump());
    Dict dict;
    for (const auto& [key, value] : message.items())
      if (!value.is_null()) dict.set(Value::string(key), jinja::value_from_json(value));
    out.push_back(alias_reasoning(dict));
  }
  return Value::list(std::move(out));
}

}  // namespace

struct ChatTemplate::Impl {
  std::string name;
  jinja::StmtList body;
};

ChatTemplate::ChatTemplate(const std::string& source, std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name = std::move(name);
  try {
    impl_->body = jinja::parse_template(source);
  } catch (const jinja::JinjaError& e) {
    rethrow(impl_->name, e);
  }
}

ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

const std::string& ChatTemplate::name() const { return impl_->name; }

std::string ChatTemplate::render(const ChatTemplateInputs& inputs) const {
  auto globals = std::make_shared<jinja::Scope>();
  jinja::add_globals(*globals);
  auto& vars = globals->vars;
  vars["messages"] = prepare_messages(inputs.messages);
  vars["tools"] = jinja::value_from_json(inputs.tools);  // null: None, as transformers passes it
  vars["documents"] = Value::none();
  vars["add_generation_prompt"] = Value::boolean(inputs.add_generation_prompt);
  vars["bos_token"] = Value::string(inputs.bos_token);
  vars["eos_token"] = Value::string(inputs.eos_token);
  if (!inputs.extra_context.is_null()) {
    if (!inputs.extra_context.is_object()) fail("chat template inputs: extra_context must be an object");
    for (const auto& [key, value] : inputs.extra_context.items()) vars[key] = jinja::value_from_json(value);
  }
  jinja::RenderOptions options;
  options.now = inputs.now ? *inputs.now : std::time(nullptr);
  jinja::Evaluator evaluator(globals, options);
  std::string out;
  try {
    evaluator.render(impl_->body, out);
  } catch (const jinja::JinjaError& e) {
    rethrow(impl_->name, e);
  }
  return out;
}

}  // namespace drift
