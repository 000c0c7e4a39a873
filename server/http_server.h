#pragma once
// HttpServer: the OpenAI-compatible HTTP front (cpp-httplib). Its threads parse and check each
// request, submit it to the EngineLoop and write the results -- whole, or as Server-Sent Events
// while the engine produces them. Routes: POST /v1/completions, /v1/chat/completions; GET
// /v1/models, /health, /metrics. With an API key, /v1/ routes need "Authorization: Bearer KEY".
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/engine_loop.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/server_metrics.h"

namespace httplib {
class ContentReader;
struct Request;
struct Response;
}  // namespace httplib

namespace drift::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                    // 0: any free port (bind() says which)
  std::string api_key;                // "" = no authentication
  int64_t max_requests = 256;         // unfinished requests at once; beyond: 429
  int64_t http_threads = 0;           // 0: max_requests + 16 (each open stream holds a thread)
  size_t max_body_bytes = 32u << 20;  // whatever the framing: Content-Length or chunked
  size_t max_connections = 0;         // waiting between requests; 0: from the open-file limit (raised at start)
  // Slow or idle clients wait in a ConnectionGate, not on an HTTP thread; these bound the wait.
  std::chrono::milliseconds header_timeout{10000};        // a request's line and headers, from their first byte
  std::chrono::milliseconds keep_alive_timeout{5000};     // an idle connection's wait for its next request
  std::chrono::milliseconds request_read_timeout{60000};  // a request's body, from its headers' arrival
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, ServingContext context, EngineLoop& loop, ServerMetrics& metrics,
             TokenText token_text);
  ~HttpServer();

  int bind();    // the port bound; DriftError when the address cannot be bound
  void serve();  // blocks until stop()
  void stop();
  bool running() const;  // serving (serve() has started listening)
  // Responses still being written (a stream may outlive its request's end by a moment).
  int64_t open_responses() const { return open_responses_; }

 private:
  void install_routes();
  void raise_listen_backlog();
  void install_checks();
  void handle_generation(Endpoint endpoint, const httplib::Request& req, httplib::Response& res,
                         const httplib::ContentReader& body);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> open_responses_{0};
};

}  // namespace drift::server
