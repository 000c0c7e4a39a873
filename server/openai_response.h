#pragma once
// The OpenAI response bodies: whole responses and Server-Sent-Event chunks for /v1/completions
// and /v1/chat/completions, logprobs in each endpoint's own layout, and usage.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sequence.h"
#include "core/token_logprobs.h"
#include "core/tools/tool_call.h"
#include "server/openai_request.h"
#include "server/request_stream.h"

namespace drift::server {

// The model's decoder: token ids to text (logprobs' token strings).
using TokenText = std::function<std::string(std::span<const int32_t> ids)>;

// Logprobs' token strings as they read in place: each token decoded after a short window of the
// tokens before it, so SentencePiece's leading spaces and characters split over byte tokens come
// out as in the text (a token decoded alone loses them).
class TokenTexts {
 public:
  TokenTexts(TokenText decode, std::span<const int32_t> before);
  std::string alternative(int32_t token) const;  // what `token` would add at the next position
  std::string next(int32_t token);               // what the committed `token` adds; it joins the window

 private:
  std::string added(int32_t token) const;

  static constexpr size_t kWindow = 4;
  TokenText decode_;
  std::vector<int32_t> window_;
  std::string window_text_;  // decode_(window_), decoded once per position
};

// One response's identity and what its bodies need.
struct ResponseContext {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  bool logprobs = false;
  TokenText token_text;              // for logprobs' token strings
  std::vector<int32_t> prompt_tail;  // the prompt's last tokens: the first one's window
  // Chat with tools: replies are read for calls (GenerationRequest::tool_format, tool_prefill).
  std::optional<tools::ToolCallFormat> tool_format;
  std::string tool_prefill;
  bool parallel_tool_calls = true;  // false: only a reply's first call is reported
};

// "stop" | "length" | "abort" | "error" (OpenAI's names where it has them).
const char* finish_reason_text(FinishReason reason);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// The whole response of a finished request (`choices`: each choice's events merged, in order);
// usage counts the prompt once and every choice's tokens.
nlohmann::json full_response(const ResponseContext& context, std::span<const StreamEvent> choices,
                             int64_t prompt_tokens);

// Streaming: the chat's opening chunk (role) of each choice, one chunk per event (text, logprobs
// and, on a choice's last, finish_reason; the event names its choice), and the usage chunk.
// `text_offset`: the choice's completion text already sent (completions' logprobs count offsets
// from the start of the reply).
nlohmann::json role_chunk(const ResponseContext& context, int64_t index);
// `calls`: the tool calls read from the choice's reply, sent whole with its last event (their
// finish_reason is "tool_calls").
nlohmann::json event_chunk(const ResponseContext& context, const StreamEvent& event, int64_t text_offset,
                           TokenTexts& texts, std::span<const tools::ToolCall> calls = {});
nlohmann::json usage_chunk(const ResponseContext& context, int64_t prompt_tokens, int64_t completion_tokens);

// "data: <json>\n\n" (invalid UTF-8 in decoded text is replaced, never a failed response).
std::string sse_data(const nlohmann::json& body);
std::string dump_json(const nlohmann::json& body);

}  // namespace drift::server
