#include "server/gated_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include "server/connection_stream.h"

namespace drift::server {
namespace {

// Set by close_after_response() during a request, read by serve() once it is answered: the
// handler runs on the thread that serves its connection.
thread_local bool t_close_after_response = false;

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
  t_close_after_response = true;
}

bool GatedServer::process_and_close_socket(socket_t sock) {
  queue_->gate().wait_for_request(Connection{sock, "", 0}, /*fresh=*/true);
  return true;
}

// One request of `connection` (its head has arrived), then back to the gate or closed.
void GatedServer::serve(Connection connection) {
  ConnectionStream stream(connection.fd, std::move(connection.pending),
                          ConnectionStream::Clock::now() + options_.request_read_timeout,
                          to_ms(read_timeout_sec_, read_timeout_usec_), to_ms(write_timeout_sec_, write_timeout_usec_));
  t_close_after_response = false;
  const bool last = ++connection.served >= options_.max_requests_per_connection || svr_sock_ == INVALID_SOCKET;
  bool client_closes = false;
  const bool ok = process_request(stream, last, client_closes, nullptr);
  connection.pending = stream.take_unread();
  if (!ok) {  // the client is gone, or a write to it failed
    ::shutdown(connection.fd, SHUT_RDWR);
    ::close(connection.fd);
  } else if (last || client_closes || t_close_after_response) {
    queue_->gate().close_gracefully(connection.fd);
  } else {
    queue_->gate().wait_for_request(std::move(connection), /*fresh=*/false);
  }
}

}  // namespace drift::server
