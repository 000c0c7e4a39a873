#pragma once
// Turns a conversation into the token ids a chat model expects: the model's own chat template
// renders it (with the generation prompt), and the text is encoded without adding BOS/EOS, as
// transformers' apply_chat_template(tokenize=True) does (templates print their own BOS).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/chat_template/model_chat_template.h"
#include "core/tokenizer/tokenizer.h"

namespace drift::app {

// How to render (vLLM's chat request fields).
struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // The last message stays open for the reply to continue: rendered without a generation prompt
  // and cut right after that message's content, as transformers' continue_final_message.
  bool continue_final_message = false;
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();  // e.g. enable_thinking
  nlohmann::ordered_json tools;                                             // OpenAI's tools for the template, or null
  std::string reply_prefix;  // appended after the generation prompt (a forced tool call's opening)
};

class ChatFormatter {
 public:
  // DriftError naming the model directory when it has no tokenizer or no chat template.
  ChatFormatter(const std::string& model_dir, const Tokenizer* tokenizer);
  std::string render(const nlohmann::ordered_json& messages, const ChatRenderOptions& options = {}) const;
  std::vector<int32_t> encode(const nlohmann::ordered_json& messages, const ChatRenderOptions& options = {}) const;

 private:
  ModelChatTemplate template_;
  const Tokenizer* tokenizer_;
};

nlohmann::ordered_json chat_message(const std::string& role, const std::string& content);
// [system (when not empty), user]: a one-turn conversation.
nlohmann::ordered_json single_turn(const std::string& system, const std::string& user);

}  // namespace drift::app
