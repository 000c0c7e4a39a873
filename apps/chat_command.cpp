// drift chat: a conversation with a chat model. Each turn renders the whole conversation with the
// model's chat template and streams the reply. Turns come from --prompt (non-interactive, in
// order) or, without one, from standard input, one line per turn (with a "> " prompt on a TTY),
// where a line starting with '/' is a command (chat_line.h). A conversation that outgrows
// max_seq_len loses its oldest turns (chat_history.h).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "apps/chat_formatter.h"
#include "apps/chat_history.h"
#include "apps/chat_line.h"
#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "apps/sampling_options.h"
#include "core/engine.h"
#include "core/error.h"

namespace po = boost::program_options;

namespace drift::app {
namespace {

struct ChatArgs {
  EngineSource source;
  std::vector<std::string> prompts;
  std::string system;
  SamplingArgs sampling;
};

void write_out(const std::string& text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    fail("writing the reply to standard output failed: {}", std::strerror(errno));
  if (std::fflush(stdout) != 0) fail("writing the reply to standard output failed: {}", std::strerror(errno));
}

class ChatSession {
 public:
  ChatSession(Engine& engine, const ChatFormatter& formatter, SamplingParams params, const std::string& system)
      : engine_(engine), formatter_(formatter), params_(std::move(params)), system_(system) {
    reset();
  }

  void reset() {
    messages_ = nlohmann::ordered_json::array();
    if (!system_.empty()) messages_.push_back(chat_message("system", system_));
  }

  // Streams the reply to `user` and keeps both in the conversation. A failed turn is reported and
  // left out, so the chat can go on.
  bool turn(const std::string& user) {
    messages_.push_back(chat_message("user", user));
    const int64_t max_seq_len = engine_.options().limits.max_seq_len;
    FittedConversation fitted = fit_conversation(messages_, system_.empty() ? 0 : 1, formatter_, max_seq_len,
                                                 reply_room(params_.max_new_tokens, max_seq_len));
    if (!fitted.fits) {
      std::fprintf(stderr,
                   "drift chat: this message does not fit: its prompt alone is %zu tokens, and max_seq_len is %lld; "
                   "send a shorter one (the conversation so far is kept; /reset starts over)\n",
                   fitted.prompt_ids.size(), static_cast<long long>(max_seq_len));
      messages_.erase(messages_.size() - 1);
      return false;
    }
    if (fitted.dropped_turns > 0) {
      std::fprintf(stderr,
                   "drift chat: the conversation outgrew max_seq_len = %lld: its %lld oldest turn(s) were dropped "
                   "to leave room for the reply (the system message is kept; /reset starts over)\n",
                   static_cast<long long>(max_seq_len), static_cast<long long>(fitted.dropped_turns));
      messages_ = std::move(fitted.messages);
    }
    const int64_t id = engine_.add_request(std::move(fitted.prompt_ids), params_);
    while (engine_.has_unfinished())
      for (const RequestOutput& out : engine_.step())
        if (out.id == id) write_out(out.text);
    write_out("\n");
    const Sequence& seq = engine_.request(id);
    if (seq.finish_reason == FinishReason::Error) {
      std::fprintf(stderr, "drift chat: this turn failed: %s\n", seq.error.c_str());
      messages_.erase(messages_.size() - 1);
      return false;
    }
    messages_.push_back(chat_message("assistant", seq.text));
    return true;
  }

 private:
  Engine& engine_;
  const ChatFormatter& formatter_;
  SamplingParams params_;
  std::string system_;
  nlohmann::ordered_json messages_;
};

// One line of an interactive chat; false when it failed (a failed turn, an unknown command).
bool run_line(ChatSession& session, const ChatLine& line) {
  switch (line.kind) {
    case ChatLineKind::Message:
      return session.turn(line.text);
    case ChatLineKind::Reset:
      session.reset();
      return true;
    case ChatLineKind::Help:
      std::fprintf(stderr, "drift chat commands:\n%s", chat_commands_help());
      return true;
    case ChatLineKind::Unknown:
      std::fprintf(stderr, "drift chat: unknown command '%s' (not sent to the model); the commands are:\n%s",
                   line.text.c_str(), chat_commands_help());
      return false;
    case ChatLineKind::Quit:
      break;  // the caller's
  }
  return true;
}

// Interactive: one turn per line until end of input or /quit; a line starting with '/' is a
// command, never sent to the model.
int run_interactive(ChatSession& session) {
  const bool tty = isatty(STDIN_FILENO);
  if (tty) std::fprintf(stderr, "drift chat: one turn per line; /help lists the commands; Ctrl-D ends\n");
  bool all_ok = true;
  std::string line;
  while (true) {
    if (tty) write_out("> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    const ChatLine parsed = parse_chat_line(line);
    if (parsed.kind == ChatLineKind::Quit) break;
    all_ok &= run_line(session, parsed);
  }
  if (tty) write_out("\n");
  return all_ok ? 0 : 1;
}

int run_chat(const std::vector<std::string>& args) {
  ChatArgs a;
  po::options_description desc("drift chat options");
  desc.add_options()("help,h", "show this help");
  add_engine_options(desc, a.source);
  desc.add_options()
      ("prompt", po::value(&a.prompts), "a user turn (repeatable: successive turns); without it, turns are read "
                                        "from standard input, one per line")
      ("system", po::value(&a.system), "the system message (default: the template's own)");
  add_sampling_options(desc, a.sampling);
  po::variables_map vm;
  const std::string usage = std::string(
                                "usage: drift chat (--config F | --model DIR) [--prompt TEXT ...]\n\n"
                                "Without --prompt, each line of standard input is a turn; a line starting with "
                                "'/' is a command:\n") +
                            chat_commands_help() +
                            "A conversation longer than engine.max_seq_len loses its oldest turns (said on "
                            "stderr); the system message stays.";
  if (!parse_command_line(args, desc, vm, usage)) return 0;
  read_sampling_options(vm, a.sampling);
  // A conversation is for reading: loading messages stay out of it unless asked for.
  if (a.source.log_level.empty() && !std::getenv("DRIFT_LOG_LEVEL")) a.source.log_level = "warn";

  const EngineConfig config = resolve_engine_config(a.source);
  const SamplingParams params = sampling_params_from_args(a.sampling, config.generation);
  auto engine = Engine::from_config(config);
  const ChatFormatter formatter(config.model.path, engine->tokenizer());
  ChatSession session(*engine, formatter, params, a.system);
  if (a.prompts.empty()) return run_interactive(session);
  bool all_ok = true;
  for (const std::string& prompt : a.prompts) all_ok &= session.turn(prompt);
  return all_ok ? 0 : 1;
}

}  // namespace

DRIFT_REGISTER_COMMAND(chat, "chat", "chat with a model through its chat template (streamed replies)", run_chat);

}  // namespace drift::app
