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

}  // namespace

ChatFormatter::ChatFormatter(const std::string& model_dir, const Tokenizer* tokenizer)
    : template_(require_template(model_dir)), tokenizer_(tokenizer) {
  if (!tokenizer_) fail("model '{}' has no tokenizer, which a chat needs", model_dir);
}

std::string ChatFormatter::render(const nlohmann::ordered_json& messages) const {
  ChatTemplateInputs inputs;
  inputs.messages = messages;
  inputs.add_generation_prompt = true;
  inputs.bos_token = template_.bos_token;
  inputs.eos_token = template_.eos_token;
  return template_.tmpl.render(inputs);
}

std::vector<int32_t> ChatFormatter::encode(const nlohmann::ordered_json& messages) const {
  return tokenizer_->encode(render(messages));
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
