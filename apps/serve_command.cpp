// drift serve: the OpenAI-compatible HTTP server (server/). The main thread builds the engine,
// starts the engine thread and the HTTP threads, then waits for SIGINT or SIGTERM: new requests
// are then refused (503), unfinished ones get --shutdown-timeout seconds to finish before they
// are aborted, and the process exits 0.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "apps/chat_formatter.h"
#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/plugin/engine_plugins.h"
#include "core/plugin/plugin_host.h"
#include "core/tools/tool_prompt.h"
#include "core/tools/tool_support.h"
#include "server/engine_loop.h"
#include "server/http_server.h"
#include "server/prompt_bound.h"

namespace po = boost::program_options;

namespace drift::app {
namespace {

struct ServeArgs {
  EngineSource source;
  server::ServerOptions server;
  std::string served_model_name;
  double shutdown_timeout = 30.0;
};

// The draft providers a request may name, and [speculative]'s default one.
void describe_speculation(Engine& engine, const EngineConfig& config, server::ServingContext& context) {
  if (!engine.plugins()) return;
  const PluginHost& host = engine.plugins()->host();
  for (const PluginEntry& plugin : config.plugins)
    if (host.is_draft_provider(plugin.name)) context.draft_providers.push_back(plugin.name);
  if (engine.options().speculation.max_draft_tokens > 0) context.default_draft_provider = host.draft_provider_name();
}

// What the chat template does with tools, asked once at startup (core/tools/tool_support.h).
tools::ToolSupport detect_tool_support(const ChatFormatter& chat) {
  tools::ToolSupport support = tools::detect_tool_support(
      [&chat](const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools, bool add_generation_prompt) {
        ChatRenderOptions options;
        options.add_generation_prompt = add_generation_prompt;
        options.tools = tools;
        return chat.render(messages, options);
      });
  if (!support.format)
    spdlog::warn("drift serve: requests with tools will be refused: {}", support.unsupported);
  else
    spdlog::info("drift serve: tool calls are read as {}{}", tools::tool_call_format_name(*support.format),
                 support.template_renders_tools ? "" : " (the chat template prints no tools: drift describes them)");
  return support;
}

server::ServingContext serving_context(Engine& engine, const EngineConfig& config, const ServeArgs& a,
                                       std::optional<ChatFormatter>& chat) {
  server::ServingContext context;
  context.model_name = a.served_model_name.empty()
                           ? std::filesystem::path(config.model.path).lexically_normal().filename().string()
                           : a.served_model_name;
  if (context.model_name.empty())
    context.model_name = std::filesystem::path(config.model.path).parent_path().filename().string();
  context.max_seq_len = engine.options().limits.max_seq_len;
  context.vocab_size = engine.executor().vocab_size();
  context.defaults = sampling_params_from(config.generation);
  if (const Tokenizer* tokenizer = engine.tokenizer()) {
    context.encode_text = [tokenizer](const std::string& text) { return tokenizer->encode_prompt(text); };
    context.max_prompt_bytes = server::prompt_byte_bound(*tokenizer, context.max_seq_len);
  }
  try {
    chat.emplace(config.model.path, engine.tokenizer());
    // HTTP threads render concurrently; one render at a time keeps the template engine's state
    // (evaluator scopes) out of any question of thread safety, at a cost far below a step's.
    auto render_mutex = std::make_shared<std::mutex>();
    context.tool_support = detect_tool_support(*chat);
    const bool template_renders_tools = context.tool_support.template_renders_tools;
    context.encode_chat = [&chat, render_mutex, template_renders_tools](const server::ChatPrompt& prompt) {
      ChatRenderOptions options{prompt.add_generation_prompt, prompt.continue_final_message, prompt.template_kwargs,
                                template_renders_tools ? prompt.tools : nullptr, prompt.reply_prefix};
      // A template that knows no tools gets them, and the calls and results of earlier turns, from drift.
      const nlohmann::ordered_json messages =
          template_renders_tools ? prompt.messages : tools::describe_tools(prompt.messages, prompt.tools);
      std::lock_guard lock(*render_mutex);
      return chat->encode(messages, options);
    };
  } catch (const DriftError& e) {
    context.no_chat_template = std::string("chat completions need the model's chat template: ") + e.what();
  }
  describe_speculation(engine, config, context);
  return context;
}

// The decoder behind logprobs' token strings (server::TokenTexts). Without a tokenizer each id
// stands for itself: the ids' decimal forms side by side, so a token's string is its id.
server::TokenText token_text(const Engine& engine) {
  const Tokenizer* tokenizer = engine.tokenizer();
  if (!tokenizer)
    return [](std::span<const int32_t> ids) {
      std::string text;
      for (int32_t id : ids) text += std::to_string(id);
      return text;
    };
  return [tokenizer](std::span<const int32_t> ids) { return tokenizer->decode({ids.begin(), ids.end()}); };
}

// Waits until no request is unfinished, or the timeout passes; then aborts what is left.
void drain(server::EngineLoop& loop, double timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (loop.unfinished() > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (loop.unfinished() > 0) {
    spdlog::warn("drift serve: {} request(s) still unfinished after {} s: aborting them", loop.unfinished(),
                 timeout_seconds);
    loop.abort_all();
  }
}

int run_serve(const std::vector<std::string>& args) {
  ServeArgs a;
  po::options_description desc("drift serve options");
  desc.add_options()("help,h", "show this help");
  add_engine_options(desc, a.source);
  desc.add_options()("host", po::value(&a.server.host)->default_value(a.server.host), "address to listen on")(
      "port", po::value(&a.server.port)->default_value(a.server.port), "port to listen on (0: any free port)")(
      "api-key", po::value(&a.server.api_key), "require \"Authorization: Bearer KEY\" on /v1/ routes")(
      "served-model-name", po::value(&a.served_model_name),
      "the model id clients give (default: the model folder's name)")(
      "max-requests", po::value(&a.server.max_requests)->default_value(a.server.max_requests),
      "unfinished requests at once; more get 429")("http-threads", po::value(&a.server.http_threads)->default_value(0),
                                                   "HTTP worker threads (0: max-requests + 16)")(
      "shutdown-timeout", po::value(&a.shutdown_timeout)->default_value(a.shutdown_timeout),
      "seconds unfinished requests get to finish after SIGINT/SIGTERM before they are aborted");
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm,
                          "usage: drift serve (--config F | --model DIR) [--host H] [--port P] [--api-key K]"))
    return 0;
  if (a.server.port < 0 || a.server.port > 65535) fail("--port {}: must be in [0, 65535]", a.server.port);
  if (a.server.max_requests < 1) fail("--max-requests {}: must be >= 1", a.server.max_requests);
  if (a.server.http_threads < 0 || a.server.http_threads > 4096)
    fail("--http-threads {}: must be in [0, 4096]", a.server.http_threads);
  if (!(a.shutdown_timeout >= 0)) fail("--shutdown-timeout {}: must be >= 0", a.shutdown_timeout);

  // Every thread started from here on inherits the mask: only sigwait below sees these signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is a failed write, not a dead server

  const EngineConfig config = resolve_engine_config(a.source);
  auto engine = Engine::from_config(config);
  std::optional<ChatFormatter> chat;
  server::ServerMetrics metrics;
  server::EngineLoop loop(*engine, a.server.max_requests, metrics);
  server::HttpServer http(a.server, serving_context(*engine, config, a, chat), loop, metrics, token_text(*engine));
  const int port = http.bind();
  std::printf("drift serve: listening on http://%s:%d\n", a.server.host.c_str(), port);
  std::fflush(stdout);

  // An engine that can run no more steps (a tensor-parallel rank died) ends the server as a signal
  // would, with an error: a supervisor restarts it instead of it failing every request.
  loop.set_on_stopped([] { kill(getpid(), SIGTERM); });
  std::thread engine_thread([&] { loop.run(); });
  std::thread http_thread([&] { http.serve(); });
  // stop() only ends a server that is already listening: a signal during startup must wait.
  const auto listening_by = Clock::now() + std::chrono::seconds(10);
  while (!http.running() && Clock::now() < listening_by) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  if (loop.stopped_by().empty())
    spdlog::info("drift serve: {} received: refusing new requests, finishing {} unfinished", strsignal(signal_number),
                 loop.unfinished());
  loop.begin_shutdown();
  drain(loop, a.shutdown_timeout);
  engine_thread.join();
  // Let the HTTP threads write the last events of the requests that just ended.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (http.open_responses() > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  http.stop();
  http_thread.join();
  if (const std::string why = loop.stopped_by(); !why.empty()) fail("drift serve: the engine stopped: {}", why);
  std::printf("drift serve: stopped\n");
  return 0;
}

}  // namespace

DRIFT_REGISTER_COMMAND(serve, "serve", "serve the OpenAI HTTP API (completions, chat, streaming, metrics)", run_serve);

}  // namespace drift::app
