#include "server/unsupported_fields.h"

#include <fmt/format.h>

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;

ApiError unsupported(const std::string& field, const std::string& what) {
  return bad_request(field, fmt::format("{}: {}", field, what));
}

// Fields whose only no-op value is "not given" (or null, or empty): they need machinery the
// engine lacks (structured output is server/structured_output_fields, tools server/tool_fields).
void refuse_given(const FieldReader& body) {
  static const char* const kNotImplemented[][2] = {
      {"allowed_token_ids", "allowed_token_ids is not supported"},
      {"bad_words", "bad_words is not supported"},
      {"logits_processors", "logits processors are not supported"},
      {"prompt_logprobs", "prompt logprobs are not supported"},
      {"truncate_prompt_tokens", "prompt truncation is not supported: send a prompt that fits"},
      {"functions", "functions (deprecated) are not supported: send tools"},
      {"documents", "documents are not supported by this server"},
      {"chat_template", "a per-request chat template is not supported: the model's own is used"},
      {"reasoning_effort", "reasoning_effort is not supported"},
      {"audio", "audio output is not supported"},
      {"prompt_embeds", "prompt embeddings are not supported"},
  };
  for (const auto& [field, why] : kNotImplemented)
    if (const Json* value = body.find(field); value && !(value->is_structured() && value->empty()))
      throw unsupported(field, why);
}

void refuse_counts_and_penalties(const FieldReader& body) {
  if (auto b = body.integer("best_of"); b && *b != 1)
    throw bad_request("best_of", fmt::format("best_of = {}: only best_of = 1 is supported", *b));
  if (auto l = body.number("length_penalty"); l && *l != 1.0)
    throw bad_request("length_penalty", fmt::format("length_penalty = {}: not supported (give 1)", *l));
  if (auto beam = body.boolean("use_beam_search"); beam && *beam)
    throw unsupported("use_beam_search", "beam search is not supported");
}

void refuse_output_shapes(const FieldReader& body, bool chat) {
  if (auto echo = body.boolean("echo"); echo && *echo) throw unsupported("echo", "echo is not supported");
  if (auto suffix = body.string("suffix"); suffix && !suffix->empty())
    throw unsupported("suffix", "suffix is not supported");
  // The prompt's BOS: completions add it as the checkpoint says; chat templates print their own.
  if (auto special = body.boolean("add_special_tokens"); special && *special != !chat)
    throw bad_request("add_special_tokens", fmt::format("add_special_tokens = {}: only {} is supported here", *special,
                                                        chat ? "false" : "true"));
  if (auto ids = body.boolean("return_tokens_as_token_ids"); ids && *ids)
    throw unsupported("return_tokens_as_token_ids", "not supported");
  if (!chat) {  // tools are a chat's (the reply is read for calls through the chat template)
    if (const Json* tools = body.find("tools"); tools && !(tools->is_array() && tools->empty()))
      throw unsupported("tools", "tools are for /v1/chat/completions");
    if (const Json* choice = body.find("tool_choice"); choice && *choice != "none" && *choice != "auto")
      throw unsupported("tool_choice", "tool calls are for /v1/chat/completions");
  }
  if (const Json* value = body.find("function_call"); value && *value != "none" && *value != "auto")
    throw unsupported("function_call", "function_call (deprecated) is not supported: send tools and tool_choice");
  if (const Json* modalities = body.find("modalities"))
    if (!modalities->is_array() || modalities->size() != 1 || (*modalities)[0] != "text")
      throw unsupported("modalities", "only [\"text\"] is supported");
}

}  // namespace

void refuse_unsupported(const FieldReader& body, bool chat) {
  refuse_given(body);
  refuse_counts_and_penalties(body);
  refuse_output_shapes(body, chat);
}

}  // namespace drift::server
