#pragma once
// The chat template a Hugging Face checkpoint directory carries, with the special-token strings
// templates print (bos_token, eos_token).
#include <optional>
#include <string>

#include "core/chat_template/chat_template.h"

namespace drift {

struct ModelChatTemplate {
  ChatTemplate tmpl;
  std::string bos_token;  // "" when tokenizer_config.json names none
  std::string eos_token;
};

// Looks, in order, for chat_template.jinja, chat_template.json ({"chat_template": ...}) and
// tokenizer_config.json's "chat_template" (a string, or a list of {name, template} of which
// "default" is used, as transformers does). nullopt when the directory has none; DriftError naming
// the file for a malformed one or a template that does not parse.
std::optional<ModelChatTemplate> load_model_chat_template(const std::string& dir);

}  // namespace drift
