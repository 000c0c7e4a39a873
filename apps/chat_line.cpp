#include "apps/chat_line.h"

namespace drift::app {

ChatLine parse_chat_line(const std::string& line) {
  if (line.empty() || line.front() != '/') return {ChatLineKind::Message, line};
  if (line.rfind("//", 0) == 0) return {ChatLineKind::Message, line.substr(1)};
  // Trailing spaces (a common slip) do not make a command unknown.
  const std::string command = line.substr(0, line.find_last_not_of(" \t\r") + 1);
  if (command == "/reset") return {ChatLineKind::Reset, ""};
  if (command == "/quit" || command == "/exit") return {ChatLineKind::Quit, ""};
  if (command == "/help") return {ChatLineKind::Help, ""};
  return {ChatLineKind::Unknown, command};
}

const char* chat_commands_help() {
  return "  /reset          forget the conversation and start over (the system message stays)\n"
         "  /quit, /exit    end the chat (so does Ctrl-D)\n"
         "  /help           list these commands\n"
         "  //text          send a message that starts with '/'\n";
}

}  // namespace drift::app
