#pragma once
// RequestStream: the channel between the engine thread and the HTTP thread serving one request.
// The engine thread admits or rejects the request, then pushes what each step produced; the HTTP
// thread waits for those events and writes them out, and cancels the request when its client
// goes away. A request with n choices (parallel samples) has one stream: every event names its
// choice, and the request is over when each choice has finished. Thread-safe; shared by both
// sides (shared_ptr), so either may finish first.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/sequence.h"
#include "core/token_logprobs.h"

namespace drift::server {

struct StreamEvent {
  int64_t index = 0;                    // the choice (parallel sample) it belongs to
  std::vector<int32_t> tokens;          // committed this step
  std::string text;                     // their text (stop strings never included)
  std::vector<TokenLogprobs> logprobs;  // one per token when asked
  bool finished = false;
  FinishReason finish_reason = FinishReason::None;
  std::string error;          // finish_reason Error: why
  int64_t output_tokens = 0;  // with `finished`: tokens generated in all
};

class RequestStream {
 public:
  enum class Admission { Pending, Admitted, Rejected };

  explicit RequestStream(int64_t prompt_tokens, int64_t choices = 1)
      : prompt_tokens_(prompt_tokens), choices_(choices) {}

  // Engine thread.
  void admit();
  void reject(std::string error);
  void push(StreamEvent event);

  // HTTP thread. wait_admission blocks until the engine thread decided; `error` gets the reason
  // of a rejection. next() gives the oldest undelivered event, or nothing after `timeout`.
  Admission wait_admission(std::string* error);
  std::optional<StreamEvent> next(std::chrono::milliseconds timeout);
  // Every choice's events until its finishing one, merged: one per choice, in choice order (a
  // non-streaming response).
  std::vector<StreamEvent> collect();

  // Either side: the client is gone (or the server aborts); the engine thread aborts the request.
  void cancel();
  bool cancelled() const;

  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t choices() const { return choices_; }

  // Latency bookkeeping (engine thread only).
  Clock::time_point arrival = Clock::now();
  bool first_token_seen = false;  // by any choice

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  Admission admission_ = Admission::Pending;
  std::string rejection_;
  std::deque<StreamEvent> events_;
  bool cancelled_ = false;
  int64_t prompt_tokens_ = 0;
  int64_t choices_ = 1;
};

}  // namespace drift::server
