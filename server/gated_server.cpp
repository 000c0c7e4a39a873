#include "server/gated_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <optional>

#include "server/connection_stream.h"

namespace drift::server {
namespace {

// What serve() learns about the request it is running, from httplib's setup hook and from
// handlers (they run on the thread that serves their connection), to decide afterwards whether
// the connection's next byte is the next request's first.
struct RequestState {
  const ConnectionStream* stream = nullptr;
  bool close_after_response = false;   // a handler said so
  bool head_parsed = false;            // httplib parsed the line and headers
  size_t head_bytes = 0;               // what the line and headers took from the stream
  std::optional<uint64_t> body_bytes;  // by Content-Length; none: chunked, or the length is not a count
};
thread_local RequestState t_request;

// The body length a request's headers declare, when that alone frames it: no Transfer-Encoding
// and at most one Content-Length, a decimal count.
std::optional<uint64_t> length_framed_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding") || req.get_header_value_count("Content-Length") > 1) return std::nullopt;
  const std::string text = req.has_header("Content-Length") ? req.get_header_value("Content-Length") : "0";
  uint64_t length = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return length;
}

std::chrono::milliseconds to_ms(time_t sec, time_t usec) { return std::chrono::milliseconds(sec * 1000 + usec / 1000); }

}  // namespace

// The task queue httplib's listen loop feeds: the HTTP threads, and the gate they take
// connections from.
class GatedServer::Queue : public httplib::TaskQueue {
 public:
  Queue(GatedServer& server, size_t threads, GateOptions gate_options)
      : server_(server), pool_(threads), gate_(gate_options, [this](Connection c) {
          pool_.enqueue([this, c = std::move(c)]() mutable { server_.serve(std::move(c)); });
        }) {}
  ~Queue() override { server_.queue_ = nullptr; }

  // httplib enqueues only process_and_close_socket(sock) of each accepted connection, which
  // here just hands the socket to the gate: run it on the accept thread, so that a new
  // connection is gated at once even while every HTTP thread is busy.
  void enqueue(std::function<void()> fn) override { fn(); }

  void shutdown() override {
    gate_.stop();      // waiting connections closed, nothing more dispatched
    pool_.shutdown();  // requests in progress finish
  }

  ConnectionGate& gate() { return gate_; }

 private:
  GatedServer& server_;
  httplib::ThreadPool pool_;
  ConnectionGate gate_;
};

GatedServer::GatedServer(GatedServerOptions options) : options_(options) {
  new_task_queue = [this] {
    queue_ = new Queue(*this, options_.threads, options_.gate);
    return queue_;
  };
  set_keep_alive_max_count(options_.max_requests_per_connection);
  set_keep_alive_timeout(std::chrono::duration_cast<std::chrono::seconds>(options_.gate.idle_timeout).count());
}

GatedServer::~GatedServer() = default;

void GatedServer::close_after_response(httplib::Response& res) {
  res.set_header("Connection", "close");
  t_request.close_after_response = true;
}

bool GatedServer::head_parsed() { return t_request.head_parsed; }

bool GatedServer::read_budget_spent() { return t_request.stream != nullptr && t_request.stream->budget_spent(); }

bool GatedServer::process_and_close_socket(socket_t sock) {
  queue_->gate().wait_for_request(Connection{sock, "", 0}, /*fresh=*/true);
  return true;
}

// One request of `connection` (its head has arrived), then back to the gate or closed.
void GatedServer::serve(Connection connection) {
  ConnectionStream stream(connection.fd, std::move(connection.pending),
                          ConnectionStream::Clock::now() + options_.request_read_timeout,
                          to_ms(read_timeout_sec_, read_timeout_usec_), to_ms(write_timeout_sec_, write_timeout_usec_),
                          options_.request_read_budget);
  t_request = RequestState{};
  t_request.stream = &stream;
  const bool last = ++connection.served >= options_.max_requests_per_connection || svr_sock_ == INVALID_SOCKET;
  bool client_closes = false;
  const bool ok = process_request(stream, last, client_closes, [&stream](httplib::Request& req) {
    t_request.head_parsed = true;
    t_request.head_bytes = stream.consumed();
    t_request.body_bytes = length_framed_body(req);
  });
  connection.pending = stream.take_unread();
  const bool reuse = reusable(stream);
  t_request = RequestState{};
  if (!ok) {  // the client is gone, or a write to it failed
    ::shutdown(connection.fd, SHUT_RDWR);
    ::close(connection.fd);
  } else if (last || client_closes || !reuse) {
    queue_->gate().close_gracefully(connection.fd);
  } else {
    queue_->gate().wait_for_request(std::move(connection), /*fresh=*/false);
  }
}

// Only when the request's end is certain: its head parsed and exactly its Content-Length of
// body read. After httplib's own early errors (400 on a bad request line, 414, 416, an Expect
// status) the body is unread, and httplib's chunked reader takes a chunk without its CRLF as
// the body's end, so anything else would let the rest be parsed as a new request (smuggled).
bool GatedServer::reusable(const ConnectionStream& stream) const {
  const RequestState& r = t_request;
  return !r.close_after_response && r.head_parsed && r.body_bytes && stream.consumed() - r.head_bytes == *r.body_bytes;
}

}  // namespace drift::server
