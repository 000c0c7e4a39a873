#pragma once
// Keeping a growing conversation within the engine's max_seq_len: every turn re-sends the whole
// history, so once it passes the limit every request would fail. The oldest turns (a user
// message and the reply to it) are dropped first; the leading system message always stays.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/chat_formatter.h"

namespace drift::app {

struct FittedConversation {
  nlohmann::ordered_json messages;  // what is sent: the conversation less its dropped turns
  std::vector<int32_t> prompt_ids;  // messages rendered and encoded
  int64_t dropped_turns = 0;        // earlier turns left out
  bool fits = true;                 // false: even the newest message alone reaches max_seq_len
};

// The tokens kept free for the reply when older turns are dropped: max_new_tokens, but at most
// half of max_seq_len, so that a large max_new_tokens ("until max_seq_len") does not drop every
// earlier turn.
int64_t reply_room(int64_t max_new_tokens, int64_t max_seq_len);

// `messages`: `num_kept` leading messages that always stay (the system message), earlier turns,
// then the newest user message. Drops the oldest turns until the prompt plus `room` tokens fits in
// `max_seq_len`. With no earlier turn left, the newest message is sent if its prompt is shorter
// than max_seq_len (the reply then gets what remains), which is all the engine needs.
FittedConversation fit_conversation(const nlohmann::ordered_json& messages, size_t num_kept,
                                    const ChatFormatter& formatter, int64_t max_seq_len, int64_t room);

}  // namespace drift::app
