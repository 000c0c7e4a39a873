#pragma once
// ChatTemplate: renders the Jinja chat templates that Hugging Face checkpoints carry in
// tokenizer_config.json, exactly as transformers' apply_chat_template does (jinja2 sandbox with
// trim_blocks and lstrip_blocks, loopcontrols, its tojson, raise_exception and strftime_now).
// No packaged C++ Jinja engine exists, so this folder holds one, limited to what real chat
// templates use; anything else is refused at parse time with an error naming the construct and
// the template line.
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace drift {

// What a template sees, in the OpenAI / transformers JSON shape. Key order is kept (ordered_json)
// because templates that print tool definitions with tojson print them in the caller's order.
struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // null: no tools given. The template then sees `tools` as None (defined), because transformers
  // passes tools=None explicitly; `documents` is always None.
  nlohmann::ordered_json tools;
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  // Further template variables (e.g. enable_thinking), as transformers' **kwargs.
  // Messages are prepared as apply_chat_template does: None-valued keys dropped, reasoning_content /
  // thinking / reasoning aliased to "thinking" and "reasoning_content".
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  // The time strftime_now formats (local time); unset: now. Tests fix it.
  std::optional<std::time_t> now;
};

class ChatTemplate {
 public:
  // Parses `source`. `name` (a file path, or "DIR/tokenizer_config.json") names the template in
  // errors. Throws DriftError for a syntax error or an unsupported construct, naming it and the
  // line.
  ChatTemplate(const std::string& source, std::string name);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;

  // The rendered prompt text. Throws DriftError when rendering fails: raise_exception (its
  // message), an undefined value used where jinja2 refuses one, a type error; each names the
  // template and line.
  std::string render(const ChatTemplateInputs& inputs) const;
  const std::string& name() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace drift
