#include "server/request_stream.h"

namespace drift::server {

void RequestStream::admit() {
  std::lock_guard lock(mutex_);
  admission_ = Admission::Admitted;
  changed_.notify_all();
}

void RequestStream::reject(std::string error) {
  std::lock_guard lock(mutex_);
  admission_ = Admission::Rejected;
  rejection_ = std::move(error);
  changed_.notify_all();
}

void RequestStream::push(StreamEvent event) {
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(event));
  changed_.notify_all();
}

RequestStream::Admission RequestStream::wait_admission(std::string* error) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return admission_ != Admission::Pending; });
  if (error) *error = rejection_;
  return admission_;
}

std::optional<StreamEvent> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  StreamEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

StreamEvent RequestStream::collect() {
  StreamEvent all;
  for (;;) {
    std::optional<StreamEvent> event = next(std::chrono::milliseconds(1000));
    if (!event) continue;
    all.tokens.insert(all.tokens.end(), event->tokens.begin(), event->tokens.end());
    all.text += event->text;
    all.logprobs.insert(all.logprobs.end(), event->logprobs.begin(), event->logprobs.end());
    if (event->finished) {
      all.finished = true;
      all.finish_reason = event->finish_reason;
      all.error = event->error;
      all.output_tokens = event->output_tokens;
      return all;
    }
  }
}

void RequestStream::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
}

bool RequestStream::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

}  // namespace drift::server
