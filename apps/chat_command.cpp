// drift chat: a conversation with a chat model. Each turn renders the whole conversation with the
// model's chat template and streams the reply. Turns come from --prompt (non-interactive, in
// order) or, without one, from standard input, one line per turn (with a "> " prompt on a TTY).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "apps/chat_formatter.h"
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

  // Streams the reply to `user` and keeps both in the conversation. A failed turn (e.g. the
  // conversation outgrew max_seq_len) is reported and left out, so the chat can go on.
  bool turn(const std::string& user) {
    messages_.push_back(chat_message("user", user));
    const int64_t id = engine_.add_request(formatter_.encode(messages_), params_);
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

// Interactive: one turn per line until end of input; "/reset" starts a new conversation.
int run_interactive(ChatSession& session) {
  const bool tty = isatty(STDIN_FILENO);
  if (tty) std::fprintf(stderr, "drift chat: one turn per line; /reset starts over; Ctrl-D ends\n");
  bool all_ok = true;
  std::string line;
  while (true) {
    if (tty) write_out("> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line == "/reset") {
      session.reset();
      continue;
    }
    all_ok &= session.turn(line);
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
  if (!parse_command_line(args, desc, vm, "usage: drift chat (--config F | --model DIR) [--prompt TEXT ...]")) return 0;
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
