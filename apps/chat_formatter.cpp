#include "apps/chat_formatter.h"

#include "core/error.h"

namespace drift::app {
namespace {

ModelChatTemplate require_template(const std::string& model_dir) {
  auto found = load_model_chat_template(model_dir);
  if (!found)
    fail(
        "model '{}' has no chat template (tokenizer_config.json 'chat_template', chat_template.jinja or "
        "chat_template.json); give the prompt as plain text instead",
        model_dir);
  return std::move(*found);
}

// transformers' continue_final_message: the text up to the end of the final message's content
// (stripped of surrounding whitespace, found from the right), so the reply continues it.
std::string cut_after_final_message(const std::string& rendered, const nlohmann::ordered_json& messages) {
  const auto content = messages.back().find("content");
  std::string final_text = content != messages.back().end() && content->is_string() ? content->get<std::string>() : "";
  const auto first = final_text.find_first_not_of(" \t\n\r\f\v");
  final_text = first == std::string::npos
                   ? ""
                   : final_text.substr(first, final_text.find_last_not_of(" \t\n\r\f\v") - first + 1);
  const size_t at = rendered.rfind(final_text);
  if (final_text.empty() || at == std::string::npos)
    fail("continue_final_message: the final message's content does not appear in the rendered conversation");
  return rendered.substr(0, at + final_text.size());
}

}  // namespace

ChatFormatter::ChatFormatter(const std::string& model_dir, const Tokenizer* tokenizer)
    : template_(require_template(model_dir)), tokenizer_(tokenizer) {
  if (!tokenizer_) fail("model '{}' has no tokenizer, which a chat needs", model_dir);
}

std::string ChatFormatter::render(const nlohmann::ordered_json& messages, const ChatRenderOptions& options) const {
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = options.add_generation_prompt && !options.continue_final_message;
  inputs.bos_token = template_.bos_token;
  inputs.eos_token = template_.eos_token;
  inputs.extra_context = options.extra_context;
  inputs.tools = options.tools;
  const std::string text = template_.tmpl.render(inputs);
  return options.continue_final_message ? cut_after_final_message(text, messages) : text + options.reply_prefix;
}

std::vector<int32_t> ChatFormatter::encode(const nlohmann::ordered_json& messages,
                                           const ChatRenderOptions& options) const {
  return tokenizer_->encode(render(messages, options));
}

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

nlohmann::ordered_json single_turn(const std::string& system, const std::string& user) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back(chat_message("system", system));
  messages.push_back(chat_message("user", user));
  return messages;
}

}  // namespace drift::app
