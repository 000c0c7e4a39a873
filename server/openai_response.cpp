#include "server/openai_response.h"

#include <algorithm>
#include <random>

#include "core/tools/tool_call_stream.h"

namespace drift::server {
namespace {

using nlohmann::json;

const char* object_name(Endpoint endpoint, bool chunk) {
  if (endpoint == Endpoint::Completions) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

json envelope(const ResponseContext& context, bool chunk) {
  return {{"id", context.id},
          {"object", object_name(context.endpoint, chunk)},
          {"created", context.created},
          {"model", context.model}};
}

json bytes_of(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}.
json chat_logprobs(const std::vector<TokenLogprobs>& logprobs, TokenTexts& texts) {
  json content = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    json top = json::array();
    for (const TokenLogprob& alt : lp.top) {
      const std::string alt_text = texts.alternative(alt.token);
      top.push_back({{"token", alt_text}, {"logprob", alt.logprob}, {"bytes", bytes_of(alt_text)}});
    }
    const std::string token = texts.next(lp.chosen.token);
    content.push_back(
        {{"token", token}, {"logprob", lp.chosen.logprob}, {"bytes", bytes_of(token)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Completions: parallel lists, top_logprobs as {token: logprob} per position.
json completion_logprobs(const std::vector<TokenLogprobs>& logprobs, int64_t offset, TokenTexts& texts) {
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  for (const TokenLogprobs& lp : logprobs) {
    json top = json::object();
    for (const TokenLogprob& alt : lp.top) top[texts.alternative(alt.token)] = alt.logprob;
    const std::string token = texts.next(lp.chosen.token);
    tokens.push_back(token);
    token_logprobs.push_back(lp.chosen.logprob);
    top_logprobs.push_back(top);
    offsets.push_back(offset);
    offset += static_cast<int64_t>(token.size());
  }
  return {
      {"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

json logprobs_json(const ResponseContext& context, const std::vector<TokenLogprobs>& logprobs, int64_t offset,
                   TokenTexts& texts) {
  if (!context.logprobs) return nullptr;
  return context.endpoint == Endpoint::ChatCompletions ? chat_logprobs(logprobs, texts)
                                                       : completion_logprobs(logprobs, offset, texts);
}

// A reply that ended by itself with calls in it finishes as "tool_calls" (one cut off by
// max_tokens stays "length").
json finish_json(const StreamEvent& event, bool called_tools = false) {
  if (!event.finished) return nullptr;
  const bool calls = called_tools && event.finish_reason == FinishReason::Stop;
  return calls ? json("tool_calls") : json(finish_reason_text(event.finish_reason));
}

// "call_" and 24 random letters and digits, as OpenAI's ids look.
std::string new_call_id() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[random() % (sizeof(kAlphabet) - 1)];
  return id;
}

// OpenAI's tool_calls: each {id, type, function: {name, arguments}}, streamed ones with their index.
json tool_calls_json(std::span<const tools::ToolCall> calls, bool streamed) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call = {{"id", new_call_id()},
                 {"type", "function"},
                 {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (streamed) call["index"] = i;
    out.push_back(std::move(call));
  }
  return out;
}

// A chat reply's message: its text, or with tools its content and calls (content null when it
// said nothing else, as OpenAI's).
json chat_message(const ResponseContext& context, const std::string& text, std::vector<tools::ToolCall>& calls) {
  if (!context.tool_format) return {{"role", "assistant"}, {"content", text}};
  tools::ToolCallStream stream(*context.tool_format, context.tool_prefill, context.parallel_tool_calls);
  std::string content = stream.feed(text);
  tools::ParsedReply reply = stream.finish();
  content += reply.content;
  calls = std::move(reply.calls);
  json message = {{"role", "assistant"},
                  {"content", calls.empty() || !content.empty() ? json(content) : json(nullptr)}};
  if (!calls.empty()) message["tool_calls"] = tool_calls_json(calls, false);
  return message;
}

}  // namespace

TokenTexts::TokenTexts(TokenText decode, std::span<const int32_t> before) : decode_(std::move(decode)) {
  const size_t keep = std::min(before.size(), kWindow);
  window_.assign(before.end() - static_cast<std::ptrdiff_t>(keep), before.end());
  window_text_ = decode_(window_);
}

// The difference of two decodes, or the token decoded alone where the window's text is no prefix
// of the longer one (a character still incomplete in bytes).
std::string TokenTexts::added(int32_t token) const {
  std::vector<int32_t> ids = window_;
  ids.push_back(token);
  const std::string full = decode_(ids);
  if (full.size() >= window_text_.size() && full.compare(0, window_text_.size(), window_text_) == 0)
    return full.substr(window_text_.size());
  const int32_t alone[] = {token};
  return decode_(alone);
}

std::string TokenTexts::alternative(int32_t token) const { return added(token); }

std::string TokenTexts::next(int32_t token) {
  std::string text = added(token);
  window_.push_back(token);
  if (window_.size() > kWindow) window_.erase(window_.begin());
  window_text_ = decode_(window_);
  return text;
}

const char* finish_reason_text(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Abort:
      return "abort";
    case FinishReason::Error:
      return "error";
    case FinishReason::None:
      break;
  }
  return "stop";
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

json full_response(const ResponseContext& context, std::span<const StreamEvent> choices, int64_t prompt_tokens) {
  json body = envelope(context, false);
  body["choices"] = json::array();
  int64_t completion_tokens = 0;
  for (const StreamEvent& all : choices) {
    json choice = {{"index", all.index}};
    std::vector<tools::ToolCall> calls;
    if (context.endpoint == Endpoint::ChatCompletions)
      choice["message"] = chat_message(context, all.text, calls);
    else
      choice["text"] = all.text;
    TokenTexts texts(context.token_text, context.prompt_tail);
    choice["logprobs"] = logprobs_json(context, all.logprobs, 0, texts);
    choice["finish_reason"] = finish_json(all, !calls.empty());
    body["choices"].push_back(std::move(choice));
    completion_tokens += all.output_tokens;
  }
  body["usage"] = usage_json(prompt_tokens, completion_tokens);
  return body;
}

json role_chunk(const ResponseContext& context, int64_t index) {
  json body = envelope(context, true);
  body["choices"] = json::array({{{"index", index},
                                  {"delta", {{"role", "assistant"}, {"content", ""}}},
                                  {"logprobs", nullptr},
                                  {"finish_reason", nullptr}}});
  return body;
}

json event_chunk(const ResponseContext& context, const StreamEvent& event, int64_t text_offset, TokenTexts& texts,
                 std::span<const tools::ToolCall> calls) {
  json body = envelope(context, true);
  json choice = {{"index", event.index}};
  if (context.endpoint == Endpoint::ChatCompletions) {
    choice["delta"] = event.text.empty() ? json::object() : json{{"content", event.text}};
    if (!calls.empty()) choice["delta"]["tool_calls"] = tool_calls_json(calls, true);
  } else {
    choice["text"] = event.text;
  }
  choice["logprobs"] = logprobs_json(context, event.logprobs, text_offset, texts);
  choice["finish_reason"] = finish_json(event, !calls.empty());
  body["choices"] = json::array({choice});
  return body;
}

json usage_chunk(const ResponseContext& context, int64_t prompt_tokens, int64_t completion_tokens) {
  json body = envelope(context, true);
  body["choices"] = json::array();
  body["usage"] = usage_json(prompt_tokens, completion_tokens);
  return body;
}

std::string dump_json(const json& body) { return body.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_data(const json& body) { return "data: " + dump_json(body) + "\n\n"; }

}  // namespace drift::server
