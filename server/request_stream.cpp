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

std::vector<StreamEvent> RequestStream::collect() {
  std::vector<StreamEvent> all(static_cast<size_t>(choices_));
  for (size_t i = 0; i < all.size(); ++i) all[i].index = static_cast<int64_t>(i);
  int64_t open = choices_;
  while (open > 0) {
    std::optional<StreamEvent> event = next(std::chrono::milliseconds(1000));
    if (!event) continue;
    StreamEvent& choice = all.at(static_cast<size_t>(event->index));
    choice.tokens.insert(choice.tokens.end(), event->tokens.begin(), event->tokens.end());
    choice.text += event->text;
    choice.logprobs.insert(choice.logprobs.end(), event->logprobs.begin(), event->logprobs.end());
    if (event->finished && !choice.finished) {
      choice.finished = true;
      choice.finish_reason = event->finish_reason;
      choice.error = event->error;
      choice.output_tokens = event->output_tokens;
      open--;
    }
  }
  return all;
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
