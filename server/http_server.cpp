#include "server/http_server.h"

#include <sys/socket.h>

#include <chrono>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "server/api_error.h"
#include "server/openai_response.h"
#include "server/request_json.h"

namespace drift::server {
namespace {

using Json = nlohmann::ordered_json;

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) { send_json(res, error.status, error_json(error)); }

// Metrics label for a path: the routes by name, everything else as one value (bounded cardinality).
std::string path_label(const std::string& path) {
  for (const char* route : {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/metrics"})
    if (path == route) return route;
  return "other";
}

int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What one streamed response keeps between the content provider's calls.
struct StreamState {
  StreamState(std::shared_ptr<RequestStream> s, ResponseContext c, bool usage)
      : stream(std::move(s)),
        context(std::move(c)),
        include_usage(usage),
        texts(context.token_text, context.prompt_tail) {}
  std::shared_ptr<RequestStream> stream;
  ResponseContext context;
  bool include_usage = false;
  bool role_sent = false;
  bool finished = false;  // the request's last event was written
  int64_t text_offset = 0;
  TokenTexts texts;  // logprobs' token strings, in place
};

// One call of a stream's content provider: the chat's role chunk first, then the next event
// (waiting up to 100 ms for one), ending with usage and [DONE]. False when the client is gone.
bool write_next_events(StreamState& state, httplib::DataSink& sink) {
  const auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
  if (state.context.endpoint == Endpoint::ChatCompletions && !state.role_sent) {
    state.role_sent = true;
    return write(sse_data(role_chunk(state.context)));
  }
  std::optional<StreamEvent> event = state.stream->next(std::chrono::milliseconds(100));
  if (!event) return sink.is_writable();
  std::string out;
  if (event->finished && event->finish_reason == FinishReason::Error) {
    out = sse_data(error_json(ApiError(500, event->error)));
  } else if (!event->text.empty() || !event->logprobs.empty() || event->finished) {
    out = sse_data(event_chunk(state.context, *event, state.text_offset, state.texts));
    state.text_offset += static_cast<int64_t>(event->text.size());
  }
  if (event->finished) {
    state.finished = true;
    if (state.include_usage)
      out += sse_data(usage_chunk(state.context, state.stream->prompt_tokens(), event->output_tokens));
    out += "data: [DONE]\n\n";
  }
  if (!out.empty() && !write(out)) return false;
  if (state.finished) sink.done();
  return true;
}

}  // namespace

struct HttpServer::Impl {
  ServerOptions options;
  ServingContext context;
  EngineLoop& loop;
  ServerMetrics& metrics;
  TokenText token_text;
  httplib::Server http;
  int listening_socket = -1;  // recorded by the socket-options hook, for raise_listen_backlog()
  std::atomic<int64_t> next_id{0};

  Impl(ServerOptions o, ServingContext c, EngineLoop& l, ServerMetrics& m, TokenText t)
      : options(std::move(o)), context(std::move(c)), loop(l), metrics(m), token_text(std::move(t)) {}

  bool authorized(const httplib::Request& req) const {
    return options.api_key.empty() || req.get_header_value("Authorization") == "Bearer " + options.api_key;
  }

  GenerationRequest parse(const httplib::Request& req, Endpoint endpoint) const {
    const Json body = parse_request_json(req.body);
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
  const int64_t threads = s.options.http_threads > 0 ? s.options.http_threads : s.options.max_requests + 16;
  http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http.set_payload_max_length(s.options.max_body_bytes);
  // An idle keep-alive connection holds a worker thread: let it go soon.
  http.set_keep_alive_timeout(2);
  // httplib's default sets SO_REUSEPORT, which would let a second server bind the same port and
  // silently split its traffic; SO_REUSEADDR only allows restarting over TIME_WAIT sockets.
  http.set_socket_options([&s](socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    s.listening_socket = sock;
  });

  http.set_pre_routing_handler([&s](const httplib::Request& req, httplib::Response& res) {
    if (req.path.rfind("/v1/", 0) != 0 || s.authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "missing or wrong API key: send \"Authorization: Bearer <key>\""));
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.metrics.count_http(path_label(req.path), res.status);
  });
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message = res.status == 404   ? fmt::format("no route {} {}", req.method, req.path)
                                : res.status == 413 ? "the request body is too large"
                                                    : fmt::format("HTTP {}", res.status);
    send_error(res, ApiError(res.status, message));
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    spdlog::error("drift serve: request failed: {}", what);
    send_error(res, ApiError(500, "internal error: " + what));
  });

  http.Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
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
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generation(Endpoint::Completions, req, res);
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    handle_generation(Endpoint::ChatCompletions, req, res);
  });
}

// Parse, submit, wait for admission, then answer whole or as Server-Sent Events.
void HttpServer::handle_generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res) {
  Impl& s = *impl_;
  std::shared_ptr<RequestStream> stream;
  GenerationRequest request;
  try {
    s.loop.check_capacity();  // before the costly part (parsing, tokenizing, template rendering)
    request = s.parse(req, endpoint);
    stream = s.loop.submit(request.prompt, request.params);
  } catch (const ApiError& e) {
    return send_error(res, e);
  }
  std::string rejection;
  if (stream->wait_admission(&rejection) == RequestStream::Admission::Rejected)
    return send_error(res, ApiError(400, rejection));
  const ResponseContext context = s.response_context(request);
  if (!request.stream) {
    const StreamEvent all = stream->collect();
    if (all.finish_reason == FinishReason::Error) return send_error(res, ApiError(500, all.error));
    return send_json(res, 200, full_response(context, all, stream->prompt_tokens()));
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
        if (!state->finished) impl_->loop.cancel(state->stream);
        open_responses_--;
      });
}

}  // namespace drift::server
