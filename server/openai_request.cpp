#include "server/openai_request.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/parallel_samples.h"
#include "core/token_logprobs.h"
#include "core/tokenizer/output_text.h"
#include "server/api_error.h"
#include "server/field_reader.h"
#include "server/structured_output_fields.h"
#include "server/tool_fields.h"
#include "server/unsupported_fields.h"

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;

void check_model(const FieldReader& body, const ServingContext& context) {
  const auto model = body.string("model");
  if (model && *model != context.model_name)
    throw ApiError(
        404, fmt::format("model \"{}\" does not exist; this server serves \"{}\"", *model, context.model_name), "model")
        .with_code("model_not_found");
}

constexpr size_t kMaxStops = 4;
constexpr double kMaxTemperature = 2.0;  // OpenAI's range is [0, 2]

ApiError out_of_range(const std::string& field, const std::string& value, const std::string& requirement) {
  return bad_request(field, fmt::format("{} = {}: {}", field, value, requirement));
}

std::vector<std::string> read_stop(const FieldReader& body) {
  const Json* stop = body.find("stop");
  if (!stop) return {};
  std::vector<std::string> stops;
  if (stop->is_string()) {
    stops.push_back(stop->get<std::string>());
  } else if (stop->is_array()) {
    for (size_t i = 0; i < stop->size(); ++i) {
      if (!(*stop)[i].is_string())
        throw bad_request(fmt::format("stop[{}]", i),
                          fmt::format("stop[{}] must be a string, got {}", i, describe_value((*stop)[i])));
      stops.push_back((*stop)[i].get<std::string>());
    }
  } else {
    throw bad_request("stop", fmt::format("stop must be a string or a list of strings, got {}", describe_value(*stop)));
  }
  if (stops.size() > kMaxStops)  // OpenAI's limit (the engine takes up to 16)
    throw bad_request("stop", fmt::format("stop holds {} strings; at most {} are allowed", stops.size(), kMaxStops));
  if (std::string bad = validate_stop_strings(stops); !bad.empty()) throw bad_request("stop", "stop: " + bad);
  return stops;
}

// `max_count`: more ids than this is a 400 before any is read (a prompt's limit is the context).
std::vector<int32_t> read_token_ids(const Json& list, const std::string& field, int64_t vocab, int64_t max_count) {
  if (!list.is_array())
    throw bad_request(field, fmt::format("{} must be a list of token ids, got {}", field, describe_value(list)));
  if (static_cast<int64_t>(list.size()) > max_count)
    throw bad_request(field,
                      fmt::format("{} holds {} token ids; at most {} are allowed", field, list.size(), max_count));
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& v = list[i];
    const std::string name = fmt::format("{}[{}]", field, i);
    if (!v.is_number_integer())
      throw bad_request(name, fmt::format("{} must be a token id (an integer), got {}", name, describe_value(v)));
    const bool in_range = !v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX);
    const int64_t id = in_range ? v.get<int64_t>() : -1;
    if (id < 0 || id >= vocab)
      throw out_of_range(name, describe_value(v), fmt::format("token ids are in [0, {})", vocab));
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

// The per-request speculation choice: {"enabled": bool, "draft_provider": name, "full_verification":
// bool} (the last: exact verification whatever the engine's verification policy, e.g. specpv).
std::string read_speculative(const FieldReader& body, const ServingContext& context, bool& full_verification) {
  const Json* spec = body.find("speculative");
  if (!spec) return "";
  const FieldReader fields(*spec, "speculative");
  for (const auto& [key, value] : spec->items())
    if (key != "enabled" && key != "draft_provider" && key != "full_verification")
      throw bad_request(
          "speculative." + key,
          fmt::format("speculative.{} is not a setting (enabled, draft_provider, full_verification)", key));
  full_verification = fields.boolean("full_verification").value_or(false);
  const auto enabled = fields.boolean("enabled");
  const auto provider = fields.string("draft_provider");
  if (enabled && !*enabled) {
    if (provider)
      throw bad_request("speculative.draft_provider", "speculative.draft_provider given with enabled = false");
    return "off";
  }
  const std::string configured = fmt::format("{}", fmt::join(context.draft_providers, ", "));
  if (provider) {
    if (std::find(context.draft_providers.begin(), context.draft_providers.end(), *provider) ==
        context.draft_providers.end())
      throw bad_request(
          "speculative.draft_provider",
          fmt::format("speculative.draft_provider = \"{}\" is not a configured draft provider (configured: {})",
                      *provider, configured.empty() ? "none" : configured));
    return *provider;
  }
  if (enabled && context.default_draft_provider.empty())
    throw bad_request("speculative.enabled",
                      context.draft_providers.empty()
                          ? "speculative.enabled = true, but no draft provider is configured"
                          : fmt::format("speculative.enabled = true, but [speculative] names no default "
                                        "draft provider; give speculative.draft_provider ({})",
                                        configured));
  return "";
}

// OpenAI's logit_bias: {"<token id>": bias, ...}, at most one entry per vocabulary token.
std::vector<std::pair<int32_t, double>> read_logit_bias(const Json& map, int64_t vocab) {
  if (!map.is_object())
    throw bad_request("logit_bias", fmt::format("logit_bias must be an object mapping token ids to biases, got {}",
                                                describe_value(map)));
  if (static_cast<int64_t>(map.size()) > vocab)
    throw bad_request("logit_bias", fmt::format("logit_bias holds {} entries, more than the vocabulary's {} tokens",
                                                map.size(), vocab));
  std::vector<std::pair<int32_t, double>> out;
  for (const auto& [key, value] : map.items()) {
    const std::string name = fmt::format("logit_bias[\"{}\"]", key);
    if (key.empty() || key.find_first_not_of("0123456789") != std::string::npos)
      throw bad_request(name, fmt::format("{}: the key must be a token id (digits), got \"{}\"", name, key));
    // Digits only: more of them than a vocabulary's ids have is out of range without parsing.
    const int64_t id = key.size() > 18 ? vocab : std::stoll(key);
    if (id >= vocab) throw out_of_range(name, key, fmt::format("token ids are in [0, {})", vocab));
    if (!value.is_number())
      throw bad_request(name, fmt::format("{} must be a number, got {}", name, describe_value(value)));
    const double bias = value.get<double>();
    if (!(bias >= -100.0 && bias <= 100.0)) throw out_of_range(name, describe_value(value), "must be in [-100, 100]");
    out.emplace_back(static_cast<int32_t>(id), bias);
  }
  return out;
}

// Penalties, logit_bias and vLLM's min_tokens (the ranges: find_invalid_sampling_param).
void read_logits_shaping(const FieldReader& body, const ServingContext& context, SamplingParams& p) {
  if (auto v = body.number("presence_penalty")) p.presence_penalty = *v;
  if (auto v = body.number("frequency_penalty")) p.frequency_penalty = *v;
  if (auto v = body.number("repetition_penalty")) p.repetition_penalty = *v;
  if (const Json* bias = body.find("logit_bias")) p.logit_bias = read_logit_bias(*bias, context.vocab_size);
  if (auto m = body.integer("min_tokens")) p.min_tokens = *m;
}

void read_sampling(const FieldReader& body, const ServingContext& context, SamplingParams& p) {
  if (auto t = body.number("temperature")) {
    if (*t < 0 || *t > kMaxTemperature)
      throw out_of_range("temperature", fmt::format("{}", *t), fmt::format("must be in [0, {}]", kMaxTemperature));
    p.temperature = *t;
  }
  if (auto t = body.number("top_p")) p.top_p = *t;
  if (auto k = body.integer("top_k")) p.top_k = *k == -1 ? 0 : *k;  // vLLM: -1 disables
  if (auto m = body.number("min_p")) p.min_p = *m;
  if (auto seed = body.unsigned_integer("seed")) p.seed = *seed;  // 0 to 2^64-1, as the CLI's --seed
  p.stop = read_stop(body);
  if (auto keep = body.boolean("include_stop_str_in_output")) p.include_stop_str_in_output = *keep;
  if (const Json* ids = body.find("stop_token_ids"))
    p.stop_token_ids = read_token_ids(*ids, "stop_token_ids", context.vocab_size, context.vocab_size);
  if (auto ignore = body.boolean("ignore_eos")) p.ignore_eos = *ignore;
  p.speculative = read_speculative(body, context, p.full_verification);
  if (auto salt = body.string("cache_salt")) {
    if (salt->find('\0') != std::string::npos) throw bad_request("cache_salt", "cache_salt contains a NUL character");
    p.cache_salt = *salt;
  }
  if (auto use = body.boolean("prefix_cache")) p.prefix_cache = *use;
  read_logits_shaping(body, context, p);
  p.structured_output = read_structured_output(body);
  if (auto bad = find_invalid_sampling_param(p)) throw out_of_range(bad->field, bad->value, bad->requirement);
}

ApiError prompt_too_long(const char* field, int64_t tokens, int64_t max_seq_len) {
  return bad_request(field, fmt::format("the prompt has {} tokens; this model's context (max_seq_len) is {} tokens, "
                                        "with room needed for at least one generated token",
                                        tokens, max_seq_len));
}

// Text of `bytes` bytes that can never fit the context: refused before the costly tokenization
// (or template rendering), so an over-long prompt costs no more than reading its body.
void check_prompt_bytes(const char* field, size_t bytes, const ServingContext& context) {
  if (context.max_prompt_bytes > 0 && bytes > context.max_prompt_bytes)
    throw bad_request(field, fmt::format("the prompt has {} bytes of text, more than fit this model's context "
                                         "(max_seq_len) of {} tokens",
                                         bytes, context.max_seq_len));
}

// max_tokens, or its newer name max_completion_tokens (both: they must agree). Left out: OpenAI's
// 16 for completions; for chat the config's [generation] max_new_tokens (ServingContext::defaults).
// Either way capped by what is left of the context; prompt and reply must fit max_seq_len.
void read_max_tokens(const FieldReader& body, const ServingContext& context, bool chat, GenerationRequest& r) {
  const auto prompt = static_cast<int64_t>(r.prompt.size());
  if (prompt >= context.max_seq_len) throw prompt_too_long(chat ? "messages" : "prompt", prompt, context.max_seq_len);
  const char* field = "max_tokens";
  std::optional<int64_t> max = body.integer("max_tokens");
  if (auto newer = body.integer("max_completion_tokens")) {
    if (max && *max != *newer)
      throw bad_request(
          "max_completion_tokens",
          fmt::format("max_completion_tokens = {} and max_tokens = {}: give one, or equal values", *newer, *max));
    max = newer;
    field = "max_completion_tokens";
  }
  const int64_t room = context.max_seq_len - prompt;
  if (!max) {
    r.params.max_new_tokens = std::min<int64_t>(chat ? context.defaults.max_new_tokens : 16, room);
    return;
  }
  if (*max < 1) throw out_of_range(field, std::to_string(*max), "must be >= 1");
  if (*max > room)
    throw out_of_range(
        field, std::to_string(*max),
        fmt::format("the prompt has {} tokens and this model's context is {} tokens, so at most {} can be "
                    "generated",
                    prompt, context.max_seq_len, room));
  r.params.max_new_tokens = *max;
}

void read_stream(const FieldReader& body, GenerationRequest& r) {
  r.stream = body.boolean("stream").value_or(false);
  if (const Json* options = body.find("stream_options")) {
    if (!r.stream) throw bad_request("stream_options", "stream_options is only allowed with stream = true");
    r.include_usage = FieldReader(*options, "stream_options").boolean("include_usage").value_or(false);
  }
}

// n: how many choices, each an independent sample of the same prompt.
void read_choice_count(const FieldReader& body, GenerationRequest& r) {
  const auto n = body.integer("n");
  if (!n) return;
  if (*n < 1 || *n > kMaxParallelSamples)
    throw out_of_range("n", std::to_string(*n), fmt::format("must be in [1, {}]", kMaxParallelSamples));
  r.n = *n;
}

void check_logprob_count(const char* field, int64_t n) {
  if (n < 0 || n > kMaxTopLogprobs)
    throw out_of_range(field, std::to_string(n), fmt::format("must be in [0, {}]", kMaxTopLogprobs));
}

std::vector<int32_t> completion_prompt(const FieldReader& body, const ServingContext& context) {
  const Json* prompt = body.find("prompt");
  if (!prompt) throw bad_request("prompt", "prompt is required");
  const Json* one = prompt;
  if (prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    if (prompt->size() != 1)
      throw bad_request("prompt", fmt::format("prompt holds {} prompts; one request takes one", prompt->size()));
    one = &(*prompt)[0];
  }
  std::vector<int32_t> ids;
  if (one->is_string()) {
    if (!context.encode_text)
      throw bad_request("prompt", "this model has no tokenizer: give the prompt as a list of token ids");
    check_prompt_bytes("prompt", one->get_ref<const std::string&>().size(), context);
    try {
      ids = context.encode_text(one->get<std::string>());
    } catch (const DriftError& e) {
      throw bad_request("prompt", fmt::format("prompt could not be tokenized: {}", e.what()));
    }
  } else {
    if (one->is_array() && static_cast<int64_t>(one->size()) >= context.max_seq_len)
      throw prompt_too_long("prompt", static_cast<int64_t>(one->size()), context.max_seq_len);
    ids = read_token_ids(*one, "prompt", context.vocab_size, context.max_seq_len);
  }
  if (ids.empty()) throw bad_request("prompt", "prompt is empty");
  return ids;
}

bool is_openai_role(const std::string& role) {
  for (const char* known : {"system", "developer", "user", "assistant", "tool"})
    if (role == known) return true;
  return false;
}

// A content list's {"type": "text", "text": ...} parts joined; other part types are refused.
std::string joined_text_parts(const Json& content, const std::string& path) {
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const FieldReader part(content[j], fmt::format("{}.content[{}]", path, j));
    const auto type = part.string("type");
    if (type != "text")
      throw bad_request(part.name("type"), fmt::format("{} = {}: only \"text\" parts are supported", part.name("type"),
                                                       type ? "\"" + *type + "\"" : "missing"));
    text += part.string("text").value_or("");
  }
  return text;
}

// The text the template will print at least once: every message's content.
size_t content_bytes(const Json& messages) {
  size_t bytes = 0;
  for (const Json& m : messages)
    if (auto it = m.find("content"); it != m.end() && it->is_string())
      bytes += it->get_ref<const std::string&>().size();
  return bytes;
}

// vLLM's chat rendering fields: add_generation_prompt (default true), continue_final_message
// (default false) and chat_template_kwargs (extra template variables, e.g. enable_thinking).
ChatPrompt read_chat_options(const FieldReader& body) {
  ChatPrompt chat;
  chat.add_generation_prompt = body.boolean("add_generation_prompt").value_or(true);
  chat.continue_final_message = body.boolean("continue_final_message").value_or(false);
  if (chat.continue_final_message && chat.add_generation_prompt && body.find("add_generation_prompt"))
    throw bad_request("continue_final_message",
                      "continue_final_message = true needs add_generation_prompt = false (as in vLLM)");
  if (chat.continue_final_message) chat.add_generation_prompt = false;
  if (const Json* kwargs = body.find("chat_template_kwargs")) {
    const FieldReader fields(*kwargs, "chat_template_kwargs");  // a 400 unless an object
    for (const auto& [key, value] : kwargs->items())
      for (const char* reserved : {"messages", "tools", "documents", "add_generation_prompt", "continue_final_message"})
        if (key == reserved)
          throw bad_request(
              fields.name(reserved),
              fmt::format("{} is set by the request itself, not through chat_template_kwargs", fields.name(reserved)));
    chat.template_kwargs = *kwargs;
  }
  return chat;
}

void check_continuation(const ChatPrompt& chat) {
  if (!chat.continue_final_message) return;
  const Json& last = chat.messages.back();
  if (last.value("role", "") != "assistant")
    throw bad_request("continue_final_message",
                      "continue_final_message = true needs the last message to be the assistant's");
}

// Tools given and not turned off: the template renders them (or drift describes them), replies
// are read for calls, and a forced choice gets its grammar (returned) and prompt prefill.
std::optional<tools::ForcedCalls> read_tools(const ToolFields& fields, const ServingContext& context, ChatPrompt& chat,
                                             GenerationRequest& r) {
  if (!fields.active()) return std::nullopt;
  if (!context.tool_support.format) throw bad_request("tools", "tools: " + context.tool_support.unsupported);
  chat.tools = fields.tools;
  r.tool_format = context.tool_support.format;
  r.parallel_tool_calls = fields.choice.parallel;
  if (!fields.forced()) return std::nullopt;
  // The forced call's opening follows the generation prompt: the reply must be a new turn.
  if (chat.continue_final_message || !chat.add_generation_prompt)
    throw bad_request("tool_choice",
                      "tool_choice required (or a named function) needs a new assistant turn: "
                      "add_generation_prompt true and no continue_final_message");
  try {
    tools::ForcedCalls forced = tools::forced_tool_calls(*r.tool_format, fields.tools, fields.choice);
    chat.reply_prefix = r.tool_prefill = forced.prefill;
    return forced;
  } catch (const grammar::GrammarError& e) {
    throw bad_request("tools", fmt::format("tools: a function's parameters cannot be compiled: {}", e.what()));
  } catch (const DriftError& e) {
    throw bad_request("tool_choice", fmt::format("tool_choice: {}", e.what()));
  }
}

}  // namespace

GenerationRequest parse_completion_request(const Json& body, const ServingContext& context) {
  const FieldReader fields(body, "");
  check_model(fields, context);
  refuse_unsupported(fields, false);
  GenerationRequest r;
  r.endpoint = Endpoint::Completions;
  r.params = context.defaults;
  read_stream(fields, r);
  read_choice_count(fields, r);
  if (auto n = fields.integer("logprobs")) {
    check_logprob_count("logprobs", *n);
    r.logprobs = true;
    r.params.logprobs = static_cast<int32_t>(*n);
  }
  r.prompt = completion_prompt(fields, context);
  read_max_tokens(fields, context, false, r);
  read_sampling(fields, context, r.params);
  return r;
}

Json normalize_messages(const Json& messages) {
  if (!messages.is_array())
    throw bad_request("messages", fmt::format("messages must be a list, got {}", describe_value(messages)));
  if (messages.empty()) throw bad_request("messages", "messages is empty");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string path = fmt::format("messages[{}]", i);
    const FieldReader message(messages[i], path);
    const auto role = message.string("role");
    if (!role) throw bad_request(path + ".role", path + ".role is required");
    if (!is_openai_role(*role))
      throw bad_request(path + ".role", fmt::format("{}.role = \"{}\": must be system, developer, user, assistant "
                                                    "or tool",
                                                    path, *role));
    Json copy = messages[i];
    const Json* content = message.find("content");
    if (const Json* calls = message.find("tool_calls"); calls && *role == "assistant")
      copy["tool_calls"] = template_tool_calls(*calls, path + ".tool_calls");
    if (content && content->is_array()) {
      copy["content"] = joined_text_parts(*content, path);
    } else if (content && !content->is_string()) {
      throw bad_request(path + ".content", fmt::format("{}.content must be a string or a list of parts, got {}", path,
                                                       describe_value(*content)));
    }
    out.push_back(std::move(copy));
  }
  return out;
}

GenerationRequest parse_chat_request(const Json& body, const ServingContext& context) {
  const FieldReader fields(body, "");
  check_model(fields, context);
  refuse_unsupported(fields, true);
  if (!context.encode_chat) throw bad_request("messages", context.no_chat_template);
  const Json* messages = fields.find("messages");
  if (!messages) throw bad_request("messages", "messages is required");
  GenerationRequest r;
  r.endpoint = Endpoint::ChatCompletions;
  r.params = context.defaults;
  read_stream(fields, r);
  read_choice_count(fields, r);
  r.logprobs = fields.boolean("logprobs").value_or(false);
  if (auto n = fields.integer("top_logprobs")) {
    check_logprob_count("top_logprobs", *n);
    if (!r.logprobs) throw bad_request("top_logprobs", "top_logprobs needs logprobs = true");
    r.params.logprobs = static_cast<int32_t>(*n);
  } else if (r.logprobs) {
    r.params.logprobs = 0;
  }
  ChatPrompt chat = read_chat_options(fields);
  chat.messages = normalize_messages(*messages);
  check_prompt_bytes("messages", content_bytes(chat.messages), context);
  check_continuation(chat);
  const ToolFields tools = read_tool_fields(fields);
  const std::optional<tools::ForcedCalls> forced = read_tools(tools, context, chat, r);
  try {
    r.prompt = context.encode_chat(chat);
  } catch (const std::exception& e) {  // DriftError, or the template's own raise (JinjaError)
    throw bad_request("messages", fmt::format("the chat template could not render messages: {}", e.what()));
  }
  if (r.prompt.empty()) throw bad_request("messages", "the rendered conversation is empty");
  read_max_tokens(fields, context, true, r);
  read_sampling(fields, context, r.params);
  if (forced) {
    if (r.params.structured_output)
      throw bad_request("tool_choice",
                        "tool_choice required (or a named function) constrains the reply to tool "
                        "calls; it cannot be combined with a structured output");
    r.params.structured_output = forced->output;
  }
  return r;
}

}  // namespace drift::server
