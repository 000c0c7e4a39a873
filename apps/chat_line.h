#pragma once
// One line typed into an interactive `drift chat`: a message for the model or a slash command.
// A line starting with '/' is always a command, so a mistyped command never reaches the model;
// "//" at the start sends a message that begins with a single '/'.
#include <string>

namespace drift::app {

enum class ChatLineKind { Message, Reset, Quit, Help, Unknown };

struct ChatLine {
  ChatLineKind kind = ChatLineKind::Message;
  std::string text;  // the message (Message) or the command as typed (Unknown)
};

ChatLine parse_chat_line(const std::string& line);

// The commands, one per line, for --help, /help and the unknown-command error.
const char* chat_commands_help();

}  // namespace drift::app
