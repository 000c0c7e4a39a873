#include "server/http_server.h"

#include <sys/socket.h>

#include <chrono>
#include <optional>
#include <string_view>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/tools/tool_call_stream.h"
#include "server/api_error.h"
#include "server/fd_limit.h"
#include "server/gated_server.h"
#include "server/openai_response.h"
#include "server/request_body.h"
#include "server/request_json.h"

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error.status, error_json(error)); }

// The routes and the one method each takes (a GET route also answers HEAD: httplib runs its GET
// handler). Another method on a route is a 405, as in OpenAI's API.
struct Route {
  const char* path;
  const char* method;
};
constexpr Route kRoutes[] = {{"/v1/completions", "POST"},
                             {"/v1/chat/completions", "POST"},
                             {"/v1/models", "GET"},
                             {"/health", "GET"},
                             {"/metrics", "GET"}};

const Route* find_route(const std::string& path) {
  for (const Route& route : kRoutes)
    if (path == route.path) return &route;
  return nullptr;
}

bool allows(const Route& route, const std::string& method) {
  return method == route.method || (method == "HEAD" && std::string_view(route.method) == "GET");
}

// Metrics label for a path: the routes by name, everything else as one value (bounded cardinality).
std::string path_label(const std::string& path) {
  const Route* route = find_route(path);
  return route ? route->path : "other";
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What one streamed response keeps between the content provider's calls: per choice, the text
// sent so far and the logprobs' token window.
struct StreamState {
  StreamState(std::shared_ptr<RequestStream> s, ResponseContext c, bool usage)
      : stream(std::move(s)), context(std::move(c)), include_usage(usage), open_choices(stream->choices()) {
    for (int64_t i = 0; i < stream->choices(); ++i) {
      choices.push_back({0, TokenTexts(context.token_text, context.prompt_tail), std::nullopt});
      if (context.tool_format)
        choices.back().tools.emplace(*context.tool_format, context.tool_prefill, context.parallel_tool_calls);
    }
  }
  struct Choice {
    int64_t text_offset = 0;
    TokenTexts texts;                            // logprobs' token strings, in place
    std::optional<tools::ToolCallStream> tools;  // chat with tools: calls held back and read
  };
  std::shared_ptr<RequestStream> stream;
  ResponseContext context;
  bool include_usage = false;
  bool role_sent = false;
  bool finished = false;      // the response's last event was written
  int64_t open_choices = 0;   // choices not finished yet (their requests still run)
  int64_t output_tokens = 0;  // summed over the finished choices
  std::vector<Choice> choices;
};

// One call of a stream's content provider: the chat's role chunks first (one per choice), then
// the next event (waiting up to 100 ms for one), ending, once every choice has finished, with
// usage and [DONE]. An error in any choice ends the response. False when the client is gone.
bool write_next_events(StreamState& state, httplib::DataSink& sink) {
  const auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
  if (state.context.endpoint == Endpoint::ChatCompletions && !state.role_sent) {
    state.role_sent = true;
    std::string roles;
    for (int64_t i = 0; i < state.stream->choices(); ++i) roles += sse_data(role_chunk(state.context, i));
    return write(roles);
  }
  std::optional<StreamEvent> event = state.stream->next(std::chrono::milliseconds(100));
  if (!event) return sink.is_writable();
  StreamState::Choice& choice = state.choices.at(static_cast<size_t>(event->index));
  std::string out;
  if (event->finished && event->finish_reason == FinishReason::Error) {
    out = sse_data(error_json(ApiError(500, event->error)));
    state.finished = true;
  } else {
    std::vector<tools::ToolCall> calls;
    if (choice.tools) {  // the text that can be content now; at the end the rest, and the calls
      event->text = choice.tools->feed(event->text);
      if (event->finished) {
        tools::ParsedReply reply = choice.tools->finish();
        event->text += reply.content;
        calls = std::move(reply.calls);
      }
    }
    if (!event->text.empty() || !event->logprobs.empty() || event->finished)
      out = sse_data(event_chunk(state.context, *event, choice.text_offset, choice.texts, calls));
    choice.text_offset += static_cast<int64_t>(event->text.size());
  }
  if (event->finished) {
    state.open_choices--;
    state.output_tokens += event->output_tokens;
    if (state.open_choices == 0 && !state.finished) {
      state.finished = true;
      if (state.include_usage)
        out += sse_data(usage_chunk(state.context, state.stream->prompt_tokens(), state.output_tokens));
    }
  }
  if (state.finished) out += "data: [DONE]\n\n";
  if (!out.empty() && !write(out)) return false;
  if (state.finished) sink.done();
  return true;
}

// The open-file soft limit, raised to the hard one: each parked connection holds a descriptor.
size_t raised_fd_limit() {
  const FdLimit limit = raise_fd_limit();
  spdlog::info("drift serve: open-file limit {} (was {})", limit.now, limit.before);
  return limit.now;
}

// What a request may read beyond its head and body limits: a chunked body's framing (size
// lines, extensions, trailers). Body chunks of 16 bytes or more fit well within it; a client
// framing 32 MiB in smaller pieces gets 413.
constexpr size_t kFramingAllowance = 1u << 20;

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  ServingContext context;
  EngineLoop& loop;
  ServerMetrics& metrics;
  TokenText token_text;
  GatedServer http;
  int listening_socket = -1;  // recorded by the socket-options hook, for raise_listen_backlog()
  std::atomic<int64_t> next_id{0};

  Impl(ServerOptions o, ServingContext c, EngineLoop& l, ServerMetrics& m, TokenText t)
      : options(std::move(o)),
        context(std::move(c)),
        loop(l),
        metrics(m),
        token_text(std::move(t)),
        http(gated_options(options)) {}

  static GatedServerOptions gated_options(const ServerOptions& o) {
    GatedServerOptions g;
    g.threads = static_cast<size_t>(o.http_threads > 0 ? o.http_threads : o.max_requests + 16);
    g.gate.head_timeout = o.header_timeout;
    g.gate.idle_timeout = o.keep_alive_timeout;
    g.gate.max_connections =
        o.max_connections > 0 ? o.max_connections : gate_connection_limit(raised_fd_limit(), g.threads);
    g.request_read_timeout = o.request_read_timeout;
    g.request_read_budget = g.gate.max_head_bytes + o.max_body_bytes + kFramingAllowance;
    return g;
  }

  bool authorized(const httplib::Request& req) const {
    return options.api_key.empty() || req.get_header_value("Authorization") == "Bearer " + options.api_key;
  }

  // The API key, then the route and its method.
  std::optional<ApiError> access_error(const httplib::Request& req, const Route* route) const {
    if (req.path.rfind("/v1/", 0) == 0 && !authorized(req))
      return ApiError(401, "missing or wrong API key: send \"Authorization: Bearer <key>\"")
          .with_code("invalid_api_key");
    if (route == nullptr) return ApiError(404, fmt::format("no route {} {}", req.method, req.path));
    if (!allows(*route, req.method))
      return ApiError(405, fmt::format("method {} is not allowed on {}: use {}", req.method, req.path, route->method));
    return std::nullopt;
  }

  GenerationRequest parse(const std::string& text, Endpoint endpoint) const {
    const Json body = parse_request_json(text);
    return endpoint == Endpoint::Completions ? parse_completion_request(body, context)
                                             : parse_chat_request(body, context);
  }

  ResponseContext response_context(const GenerationRequest& r) {
    const bool chat = r.endpoint == Endpoint::ChatCompletions;
    ResponseContext response;
    response.endpoint = r.endpoint;
    response.id = fmt::format("{}-{}-{}", chat ? "chatcmpl" : "cmpl", unix_seconds(), next_id++);
    response.created = unix_seconds();
    response.model = context.model_name;
    response.logprobs = r.logprobs;
    response.token_text = token_text;
    response.tool_format = r.tool_format;
    response.tool_prefill = r.tool_prefill;
    response.parallel_tool_calls = r.parallel_tool_calls;
    if (r.logprobs)
      response.prompt_tail.assign(r.prompt.end() - std::min<ptrdiff_t>(4, std::ssize(r.prompt)), r.prompt.end());
    return response;
  }
};

HttpServer::HttpServer(ServerOptions options, ServingContext context, EngineLoop& loop, ServerMetrics& metrics,
                       TokenText token_text)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(context), loop, metrics, std::move(token_text))) {
  install_routes();
}

HttpServer::~HttpServer() = default;

int HttpServer::bind() {
  const ServerOptions& o = impl_->options;
  const int port =
      o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    fail("drift serve: cannot listen on {}:{} (--host / --port): the address is in use or invalid", o.host, o.port);
  raise_listen_backlog();
  return port;
}

// cpp-httplib 0.11 (Debian's, compiled) listens with a backlog of 5. A burst of clients then
// overflows the accept queue while the accept thread is descheduled, the kernel falls back to
// SYN cookies, and some of those connections are reset (CI saw it with 64 concurrent streams
// under ASan). listen() again on the bound socket raises its backlog to the system's maximum.
void HttpServer::raise_listen_backlog() {
  if (impl_->listening_socket < 0 || ::listen(impl_->listening_socket, SOMAXCONN) != 0)
    spdlog::warn("drift serve: could not raise the listen backlog; bursts of connections may be refused");
}

void HttpServer::serve() { impl_->http.listen_after_bind(); }

void HttpServer::stop() { impl_->http.stop(); }

bool HttpServer::running() const { return impl_->http.is_running(); }

void HttpServer::install_routes() {
  Impl& s = *impl_;
  httplib::Server& http = s.http;
  // Generation bodies are read by handle_generation (request_body), with the limit enforced
  // whatever the framing; this covers any body httplib itself would read.
  http.set_payload_max_length(s.options.max_body_bytes);
  // httplib's default sets SO_REUSEPORT, which would let a second server bind the same port and
  // silently split its traffic; SO_REUSEADDR only allows restarting over TIME_WAIT sockets.
  http.set_socket_options([&s](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    s.listening_socket = sock;
  });

  install_checks();
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.metrics.count_http(path_label(req.path), res.status);
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // httplib answers a bad request line (400), a long URI (414) or a bad Range (416) before
    // the pre-routing hook, leaving the body unread: say the connection closes, as it will.
    if (!GatedServer::head_parsed() || has_body(req)) GatedServer::close_after_response(res);
    if (!res.body.empty()) return;
    const std::string message = res.status == 404   ? fmt::format("no route {} {}", req.method, req.path)
                                : res.status == 413 ? "the request body is too large"
                                                    : fmt::format("HTTP {}", res.status);
    send_error(res, ApiError(res.status, message));
  });
  http.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("drift serve: request failed: {}", what);
    send_error(res, ApiError(500, "internal error: " + what));
    if (has_body(req)) GatedServer::close_after_response(res);  // it may be unread
  });

  http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    if (const std::string why = s.loop.stopped_by(); !why.empty())
      return send_error(res, ApiError(503, "the engine stopped: " + why));
    if (s.loop.shutting_down()) return send_error(res, ApiError(503, "the server is shutting down"));
    send_json(res, 200, {{"status", "ok"}});
  });
  http.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
    nlohmann::json model = {{"id", s.context.model_name},
                            {"object", "model"},
                            {"created", unix_seconds()},
                            {"owned_by", "driftengine"},
                            {"max_model_len", s.context.max_seq_len}};
    send_json(res, 200, {{"object", "list"}, {"data", nlohmann::json::array({model})}});
  });
  // The content-reader overloads: the handler reads the body itself, within the limit.
  http.Post("/v1/completions",
            [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& body) {
              handle_generation(Endpoint::Completions, req, res, body);
            });
  http.Post("/v1/chat/completions",
            [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& body) {
              handle_generation(Endpoint::ChatCompletions, req, res, body);
            });
}

// Before routing, so that a request refused here never has its body read: the body's framing,
// the API key, then the route and its method. A body left unread closes the connection after the response.
void HttpServer::install_checks() {
  Impl& s = *impl_;
  s.http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    const Route* route = find_route(req.path);
    std::optional<ApiError> error = framing_error(req);
    if (!error) error = s.access_error(req, route);
    if (error && error->status == 405) res.set_header("Allow", route->method);
    const bool reads_body = route != nullptr && std::string_view(route->method) == "POST";
    if (has_body(req) && (error || !reads_body)) GatedServer::close_after_response(res);
    if (!error) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, *error);
    return httplib::Server::HandlerResponse::Handled;
  });
}

// Parse, submit, wait for admission, then answer whole or as Server-Sent Events.
void HttpServer::handle_generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& reader) {
  Impl& s = *impl_;
  std::string body;
  try {
    body = read_json_body(req, reader, s.options.max_body_bytes);
  } catch (const ApiError& e) {
    GatedServer::close_after_response(res);  // the rest of the body is unread
    // The read budget runs out first when chunked framing (size lines, extensions, trailers)
    // outgrows it: the body is too large all the same.
    return send_error(res, GatedServer::read_budget_spent() ? body_too_large(s.options.max_body_bytes) : e);
  }
  std::shared_ptr<RequestStream> stream;
  GenerationRequest request;
  try {
    s.loop.check_capacity();  // before the costly part (parsing, tokenizing, template rendering)
    request = s.parse(body, endpoint);
    stream = s.loop.submit(request.prompt, request.params, request.n);
  } catch (const ApiError& e) {
    return send_error(res, e);
  }
  std::string rejection;
  if (stream->wait_admission(&rejection) == RequestStream::Admission::Rejected)
    return send_error(res, ApiError(400, rejection));
  const ResponseContext context = s.response_context(request);
  if (!request.stream) {
    const std::vector<StreamEvent> choices = stream->collect();
    for (const StreamEvent& choice : choices)
      if (choice.finish_reason == FinishReason::Error) return send_error(res, ApiError(500, choice.error));
    return send_json(res, 200, full_response(context, choices, stream->prompt_tokens()));
  }
  auto state = std::make_shared<StreamState>(stream, context, request.include_usage);
  open_responses_++;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](size_t, httplib::DataSink& sink) {
        // httplib does not catch what a content provider throws (it would end the process):
        // a failure here ends this stream with an error event, and the request is aborted.
        try {
          return write_next_events(*state, sink);
        } catch (const std::exception& e) {
          spdlog::error("drift serve: streaming a response failed: {}", e.what());
          const std::string out = sse_data(error_json(ApiError(500, e.what()))) + "data: [DONE]\n\n";
          sink.write(out.data(), out.size());
          return false;
        }
      },
      [this, state](bool) {
        // The client went away (or a write failed) before the end: the engine aborts the
        // request and frees its pages.
        if (state->open_choices > 0) impl_->loop.cancel(state->stream);
        open_responses_--;
      });
}

}  // namespace drift::server
