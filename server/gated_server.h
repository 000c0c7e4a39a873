#pragma once
// GatedServer: cpp-httplib's Server with its connections kept by a ConnectionGate between
// requests, so that an HTTP thread only runs a request whose headers have all arrived and is
// free again as soon as its response is written.
//
// httplib 0.11 gives each connection a pool thread from accept to close: it blocks reading the
// headers (each read may wait 5 s, so a header trickled a byte at a time never times out) and
// waiting for the next keep-alive request, and closes every connection after 5 requests. Here
// process_and_close_socket() only hands the socket to the gate; the gate dispatches a complete
// head to a pool thread, which runs httplib's own request parsing and routing
// (process_request) over a ConnectionStream and returns the connection to the gate afterwards.
#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "server/connection_gate.h"

namespace drift::server {

class ConnectionStream;

struct GatedServerOptions {
  size_t threads = 16;                                    // HTTP threads: requests handled at once
  GateOptions gate;                                       // head and idle timeouts
  std::chrono::milliseconds request_read_timeout{60000};  // from a head's dispatch to its body's last byte
  size_t max_requests_per_connection = 100000;            // then the connection is closed
  // Bytes one request may read: line, headers, body and (chunked) framing. Past it reads fail.
  size_t request_read_budget = (32u << 20) + (1u << 20);
};

class GatedServer : public httplib::Server {
 public:
  explicit GatedServer(GatedServerOptions options);
  ~GatedServer() override;

  // From a handler: close this connection once its response is written (gracefully: the
  // client still sending a body we did not read gets the response, not a reset). Needed
  // whenever a request's body was left unread, or it would be parsed as the next request.
  static void close_after_response(httplib::Response& res);
  // From a handler or the error handler, about the request of this thread's connection:
  // whether httplib parsed its line and headers (else its end is unknown and the connection
  // cannot be reused), and whether it failed by reaching request_read_budget.
  static bool head_parsed();
  static bool read_budget_spent();

 private:
  class Queue;
  bool process_and_close_socket(socket_t sock) override;
  void serve(Connection connection);
  bool reusable(const ConnectionStream& stream) const;

  GatedServerOptions options_;
  Queue* queue_ = nullptr;  // owned by httplib's listen loop (new_task_queue), alive while listening
};

}  // namespace drift::server
