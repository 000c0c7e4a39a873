#pragma once
// The OpenAI request bodies (/v1/completions, /v1/chat/completions) turned into what the engine
// runs: prompt ids and SamplingParams. Every field is checked here, before the request is queued:
// a wrong type, an out-of-range value, an unsupported option, an unknown draft provider or a
// prompt that cannot fit the model's context is an ApiError (400) naming the field.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sampling_params.h"
#include "core/tools/tool_support.h"

namespace drift::server {

// A conversation and how to render it (vLLM's chat fields, passed to the chat template).
struct ChatPrompt {
  nlohmann::ordered_json messages;  // normalized (normalize_messages)
  bool add_generation_prompt = true;
  // Render the last (assistant) message open, so the reply continues it (transformers'
  // continue_final_message: the text is cut right after that message's content).
  bool continue_final_message = false;
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();  // extra template variables
  nlohmann::ordered_json tools;  // OpenAI's tools, or null (server/tool_fields.h)
  // Appended to the rendered prompt: a forced tool call's opening (core/tools/forced_tool_calls.h).
  std::string reply_prefix;
};

// What parsing needs to know about the served model and engine (fixed while serving).
struct ServingContext {
  std::string model_name;   // the id /v1/models lists; "model" must name it
  int64_t max_seq_len = 0;  // prompt + generated tokens
  int64_t vocab_size = 0;
  // The config's [generation]: fields a request leaves out. Its max_new_tokens is also a chat's
  // default max_tokens (capped by the rest of the context), as vLLM takes max_new_tokens from the
  // generation config: reserving the whole context per chat would let guaranteed_no_evict run
  // only a few at once.
  SamplingParams defaults;
  // Text -> prompt ids (BOS/EOS as the checkpoint says); null when the model has no tokenizer.
  std::function<std::vector<int32_t>(const std::string&)> encode_text;
  // Prompt text (or chat message contents, summed) longer than this can never fit max_seq_len
  // tokens (server/prompt_bound.h): refused before tokenizing. 0: no bound.
  size_t max_prompt_bytes = 0;
  // Messages -> prompt ids through the model's chat template; null when it has none, and then
  // no_chat_template says why.
  std::function<std::vector<int32_t>(const ChatPrompt&)> encode_chat;
  std::string no_chat_template;
  // What the chat template does with tools and how its model writes calls (detected at startup).
  tools::ToolSupport tool_support;
  std::vector<std::string> draft_providers;  // configured [[plugins]] draft providers
  std::string default_draft_provider;        // [speculative]'s ("" = speculation off by default)
};

enum class Endpoint { Completions, ChatCompletions };

struct GenerationRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::vector<int32_t> prompt;
  SamplingParams params;
  int64_t n = 1;  // choices: parallel samples sharing the prompt's KV (Engine::add_samples)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage: a usage chunk before [DONE]
  bool logprobs = false;       // report logprobs (params.logprobs: how many alternatives)
  // Chat with tools: replies are read for calls in this syntax, after `tool_prefill` (the part of
  // a forced call the prompt already holds).
  std::optional<tools::ToolCallFormat> tool_format;
  std::string tool_prefill;
  bool parallel_tool_calls = true;  // false: at most one call per reply
};

GenerationRequest parse_completion_request(const nlohmann::ordered_json& body, const ServingContext& context);
GenerationRequest parse_chat_request(const nlohmann::ordered_json& body, const ServingContext& context);

// Chat message content as the templates expect it: a string stays; a list of {"type": "text",
// "text": ...} parts becomes their concatenation (other part types are a 400 naming the part).
// Roles are OpenAI's: system, developer, user, assistant, tool (others: a 400 naming the role).
nlohmann::ordered_json normalize_messages(const nlohmann::ordered_json& messages);

}  // namespace drift::server
