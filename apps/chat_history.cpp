#include "apps/chat_history.h"

#include <algorithm>
#include <cstddef>

namespace drift::app {
namespace {

// Erases the oldest turn after the kept messages: its user message and everything up to the next
// user message (the reply; a template's tool messages too). False when the newest message is all
// that is left.
bool drop_oldest_turn(nlohmann::ordered_json& messages, size_t num_kept) {
  const size_t last = messages.size() - 1;
  if (num_kept >= last) return false;
  size_t end = num_kept + 1;
  while (end < last && messages[end]["role"] != "user") ++end;
  messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(num_kept),
                 messages.begin() + static_cast<std::ptrdiff_t>(end));
  return true;
}

}  // namespace

int64_t reply_room(int64_t max_new_tokens, int64_t max_seq_len) {
  return std::max<int64_t>(1, std::min(max_new_tokens, max_seq_len / 2));
}

FittedConversation fit_conversation(const nlohmann::ordered_json& messages, size_t num_kept,
                                    const ChatFormatter& formatter, int64_t max_seq_len, int64_t room) {
  FittedConversation fitted{messages, formatter.encode(messages)};
  auto too_long = [&] { return static_cast<int64_t>(fitted.prompt_ids.size()) + room > max_seq_len; };
  while (too_long() && drop_oldest_turn(fitted.messages, num_kept)) {
    ++fitted.dropped_turns;
    fitted.prompt_ids = formatter.encode(fitted.messages);
  }
  fitted.fits = static_cast<int64_t>(fitted.prompt_ids.size()) < max_seq_len;
  return fitted;
}

}  // namespace drift::app
