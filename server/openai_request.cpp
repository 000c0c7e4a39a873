#include "server/openai_request.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/token_logprobs.h"
#include "core/tokenizer/output_text.h"
#include "server/api_error.h"
#include "server/field_reader.h"

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;

void check_model(const FieldReader& body, const ServingContext& context) {
  const auto model = body.string("model");
  if (model && *model != context.model_name)
    throw ApiError(404,
                   fmt::format("model \"{}\" does not exist; this server serves \"{}\"", *model, context.model_name),
                   "model")
        .with_code("model_not_found");
}

// Options DriftEngine does not implement: accepted only at their no-op values, so a client never
// silently gets something other than what it asked for.
void refuse_unsupported(const FieldReader& body) {
  if (auto n = body.integer("n"); n && *n != 1)
    throw bad_request("n", fmt::format("n = {}: only n = 1 is supported", *n));
  if (auto b = body.integer("best_of"); b && *b != 1)
    throw bad_request("best_of", fmt::format("best_of = {}: only best_of = 1 is supported", *b));
  for (const char* penalty : {"presence_penalty", "frequency_penalty"})
    if (auto p = body.number(penalty); p && *p != 0.0)
      throw bad_request(penalty, fmt::format("{} = {}: penalties are not supported (give 0)", penalty, *p));
  if (auto r = body.number("repetition_penalty"); r && *r != 1.0)
    throw bad_request("repetition_penalty", fmt::format("repetition_penalty = {}: not supported (give 1)", *r));
  if (const Json* bias = body.find("logit_bias"); bias && !bias->empty())
    throw bad_request("logit_bias", "logit_bias is not supported");
  if (auto echo = body.boolean("echo"); echo && *echo) throw bad_request("echo", "echo is not supported");
  if (auto suffix = body.string("suffix"); suffix && !suffix->empty())
    throw bad_request("suffix", "suffix is not supported");
  if (const Json* tools = body.find("tools"); tools && !tools->empty())
    throw bad_request("tools", "tools are not supported by this server");
  if (const Json* format = body.find("response_format")) {
    const auto type = FieldReader(*format, "response_format").string("type");
    if (type && *type != "text")
      throw bad_request("response_format.type",
                        fmt::format("response_format.type = \"{}\": only \"text\" is supported", *type));
  }
}

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
  if (std::string bad = validate_stop_strings(stops); !bad.empty()) throw bad_request("stop", "stop: " + bad);
  return stops;
}

std::vector<int32_t> read_token_ids(const Json& list, const std::string& field, int64_t vocab) {
  if (!list.is_array())
    throw bad_request(field, fmt::format("{} must be a list of token ids, got {}", field, describe_value(list)));
  std::vector<int32_t> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& v = list[i];
    const std::string name = fmt::format("{}[{}]", field, i);
    if (!v.is_number_integer())
      throw bad_request(name, fmt::format("{} must be a token id (an integer), got {}", name, describe_value(v)));
    const auto id = v.get<int64_t>();
    if (id < 0 || id >= vocab)
      throw out_of_range(name, std::to_string(id), fmt::format("token ids are in [0, {})", vocab));
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

void read_sampling(const FieldReader& body, const ServingContext& context, SamplingParams& p) {
  if (auto t = body.number("temperature")) p.temperature = *t;
  if (auto t = body.number("top_p")) p.top_p = *t;
  if (auto k = body.integer("top_k")) p.top_k = *k == -1 ? 0 : *k;  // vLLM: -1 disables
  if (auto m = body.number("min_p")) p.min_p = *m;
  if (auto seed = body.integer("seed")) {
    if (*seed < 0) throw out_of_range("seed", std::to_string(*seed), "must be >= 0");
    p.seed = static_cast<uint64_t>(*seed);
  }
  p.stop = read_stop(body);
  if (const Json* ids = body.find("stop_token_ids"))
    p.stop_token_ids = read_token_ids(*ids, "stop_token_ids", context.vocab_size);
  if (auto ignore = body.boolean("ignore_eos")) p.ignore_eos = *ignore;
  p.speculative = read_speculative(body, context, p.full_verification);
  if (auto salt = body.string("cache_salt")) {
    if (salt->find('\0') != std::string::npos) throw bad_request("cache_salt", "cache_salt contains a NUL character");
    p.cache_salt = *salt;
  }
  if (auto use = body.boolean("prefix_cache")) p.prefix_cache = *use;
  if (auto bad = find_invalid_sampling_param(p)) throw out_of_range(bad->field, bad->value, bad->requirement);
}

// max_tokens (or max_completion_tokens): what is left of the context when not given (chat), or
// OpenAI's 16 (completions). Prompt and reply must fit max_seq_len, as in vLLM.
void read_max_tokens(const FieldReader& body, const ServingContext& context, bool chat, GenerationRequest& r) {
  const auto prompt = static_cast<int64_t>(r.prompt.size());
  const char* prompt_field = chat ? "messages" : "prompt";
  if (prompt >= context.max_seq_len)
    throw bad_request(prompt_field,
                      fmt::format("the prompt has {} tokens; this model's context (max_seq_len) is {} tokens, "
                                  "with room needed for at least one generated token",
                                  prompt, context.max_seq_len));
  const char* field = "max_tokens";
  std::optional<int64_t> max = body.integer("max_tokens");
  if (chat && !max && (max = body.integer("max_completion_tokens"))) field = "max_completion_tokens";
  const int64_t room = context.max_seq_len - prompt;
  if (!max) {
    r.params.max_new_tokens = chat ? room : std::min<int64_t>(16, room);
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
    try {
      ids = context.encode_text(one->get<std::string>());
    } catch (const DriftError& e) {
      throw bad_request("prompt", fmt::format("prompt could not be tokenized: {}", e.what()));
    }
  } else {
    ids = read_token_ids(*one, "prompt", context.vocab_size);
  }
  if (ids.empty()) throw bad_request("prompt", "prompt is empty");
  return ids;
}

}  // namespace

GenerationRequest parse_completion_request(const Json& body, const ServingContext& context) {
  const FieldReader fields(body, "");
  check_model(fields, context);
  refuse_unsupported(fields);
  GenerationRequest r;
  r.endpoint = Endpoint::Completions;
  r.params = context.defaults;
  read_stream(fields, r);
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
    if (!message.string("role")) throw bad_request(path + ".role", path + ".role is required");
    Json copy = messages[i];
    const Json* content = message.find("content");
    if (content && content->is_array()) {
      std::string text;
      for (size_t j = 0; j < content->size(); ++j) {
        const FieldReader part((*content)[j], fmt::format("{}.content[{}]", path, j));
        const auto type = part.string("type");
        if (type != "text")
          throw bad_request(part.name("type"), fmt::format("{} = {}: only \"text\" parts are supported",
                                                           part.name("type"), type ? "\"" + *type + "\"" : "missing"));
        text += part.string("text").value_or("");
      }
      copy["content"] = text;
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
  refuse_unsupported(fields);
  if (!context.encode_chat) throw bad_request("messages", context.no_chat_template);
  const Json* messages = fields.find("messages");
  if (!messages) throw bad_request("messages", "messages is required");
  GenerationRequest r;
  r.endpoint = Endpoint::ChatCompletions;
  r.params = context.defaults;
  read_stream(fields, r);
  r.logprobs = fields.boolean("logprobs").value_or(false);
  if (auto n = fields.integer("top_logprobs")) {
    check_logprob_count("top_logprobs", *n);
    if (!r.logprobs) throw bad_request("top_logprobs", "top_logprobs needs logprobs = true");
    r.params.logprobs = static_cast<int32_t>(*n);
  } else if (r.logprobs) {
    r.params.logprobs = 0;
  }
  const Json normalized = normalize_messages(*messages);
  try {
    r.prompt = context.encode_chat(normalized);
  } catch (const std::exception& e) {  // DriftError, or the template's own raise (JinjaError)
    throw bad_request("messages", fmt::format("the chat template could not render messages: {}", e.what()));
  }
  if (r.prompt.empty()) throw bad_request("messages", "the rendered conversation is empty");
  read_max_tokens(fields, context, true, r);
  read_sampling(fields, context, r.params);
  return r;
}

}  // namespace drift::server
