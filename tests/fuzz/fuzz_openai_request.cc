// libFuzzer target: an OpenAI request body as drift serve receives it, turned into an engine
// request -- server::parse_request_json, then parse_completion_request or parse_chat_request
// (server/request_json.h, server/openai_request.h) -- with a small self-contained serving context:
// a ChatML chat template (rendered by the real template engine, chat_template_kwargs included)
// and a one-id-per-byte tokenizer, so every field check, the prompt bounds and the rendering run
// without model files.
//
// Input layout: the first byte picks the endpoint (even: /v1/completions, odd:
// /v1/chat/completions); the rest is the body text.
// An ApiError is how the server refuses a body; anything else is a finding (a 500 in the server).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/chat_template/chat_template.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/request_json.h"

namespace {

using drift::server::ChatPrompt;
using drift::server::ServingContext;

constexpr const char* kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if enable_thinking is defined and not enable_thinking %}{{ '<think></think>' "
    "}}{% endif %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

std::vector<int32_t> encode_bytes(const std::string& text) {
  std::vector<int32_t> ids{1};
  for (unsigned char c : text) ids.push_back(10 + c % 90);
  return ids;
}

const ServingContext& serving_context() {
  static const ServingContext* const context = [] {
    auto* c = new ServingContext;
    c->model_name = "fuzz";
    c->max_seq_len = 256;
    c->vocab_size = 100;
    c->defaults.max_new_tokens = 32;
    c->max_prompt_bytes = 1024;
    c->encode_text = encode_bytes;
    static const drift::ChatTemplate tmpl(kChatMl, "fuzz/chatml.jinja");
    c->encode_chat = [](const ChatPrompt& chat) {
      drift::ChatTemplateInputs inputs;
      inputs.messages = chat.messages;
      inputs.add_generation_prompt = chat.add_generation_prompt;
      inputs.extra_context = chat.template_kwargs;
      return encode_bytes(tmpl.render(inputs));
    };
    c->draft_providers = {"ngram", "suffix_cache"};
    c->default_draft_provider = "ngram";
    return c;
  }();
  return *context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const nlohmann::ordered_json body = drift::server::parse_request_json(text);
    const auto request = chat ? drift::server::parse_chat_request(body, serving_context())
                              : drift::server::parse_completion_request(body, serving_context());
    if (request.prompt.empty() || request.params.max_new_tokens < 1 ||
        static_cast<int64_t>(request.prompt.size()) + request.params.max_new_tokens > serving_context().max_seq_len)
      __builtin_trap();  // an accepted request must be one the engine can run
  } catch (const drift::server::ApiError&) {
  }
  return 0;
}
