#pragma once
// The OpenAI response bodies: whole responses and Server-Sent-Event chunks for /v1/completions
// and /v1/chat/completions, logprobs in each endpoint's own layout, and usage.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/sequence.h"
#include "core/token_logprobs.h"
#include "server/openai_request.h"
#include "server/request_stream.h"

namespace drift::server {

// One response's identity and what its bodies need.
struct ResponseContext {
  Endpoint endpoint = Endpoint::Completions;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  bool logprobs = false;
  std::function<std::string(int32_t)> token_text;  // one token's text (logprobs)
};

// "stop" | "length" | "abort" | "error" (OpenAI's names where it has them).
const char* finish_reason_text(FinishReason reason);

nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);

// The whole response of a finished request (`all`: every event merged).
nlohmann::json full_response(const ResponseContext& context, const StreamEvent& all, int64_t prompt_tokens);

// Streaming: the chat's opening chunk (role), one chunk per event (text, logprobs and, on the
// last, finish_reason), and the usage chunk. `text_offset`: the completion text already sent
// (completions' logprobs count offsets from the start of the reply).
nlohmann::json role_chunk(const ResponseContext& context);
nlohmann::json event_chunk(const ResponseContext& context, const StreamEvent& event, int64_t text_offset);
nlohmann::json usage_chunk(const ResponseContext& context, int64_t prompt_tokens, int64_t completion_tokens);

// "data: <json>\n\n" (invalid UTF-8 in decoded text is replaced, never a failed response).
std::string sse_data(const nlohmann::json& body);
std::string dump_json(const nlohmann::json& body);

}  // namespace drift::server
