#pragma once
// ConnectionGate: where a connection waits, without a thread, until its next request's line and
// headers have fully arrived. HTTP threads then only ever run requests they can read at once:
// a client that trickles its headers (slowloris), or an idle keep-alive connection, holds a
// socket here, never an HTTP thread, so it cannot starve /health or anyone else.
//
// One thread watches every waiting socket with epoll (edge-triggered: woken at each arrival)
// and peeks, without reading, at what has arrived. A complete head (up to the blank line) is
// dispatched; a connection that stays silent past its idle time is closed; one whose head does
// not complete within the head timeout gets 408, one whose head outgrows the limit gets 431.
// It also closes connections gracefully ("lingering close": stop writing, drain what the client
// is still sending for a while, then close), so a client whose body was refused mid-upload
// reads the error instead of a reset. It holds at most max_connections: the oldest idle
// keep-alive connections make room for new ones, which are refused only when none is idle.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace drift::server {

struct GateOptions {
  std::chrono::milliseconds head_timeout{10000};  // from the head's first byte (or the connection's accept)
  std::chrono::milliseconds idle_timeout{5000};   // a kept-alive connection's wait for its next request
  std::chrono::milliseconds linger{2000};         // draining before a graceful close
  size_t max_head_bytes = 32 * 1024;              // request line + headers
  // Connections held at once. When full, an idle or closing one is dropped to make room; when
  // every one is mid-head, a newcomer gets 503 and is closed.
  size_t max_connections = 4096;
};

// A connection between requests: its socket, bytes already read past the last request
// (pipelined), and how many requests it has served.
struct Connection {
  int fd = -1;
  std::string pending;
  size_t served = 0;
};

class ConnectionGate {
 public:
  using Dispatch = std::function<void(Connection)>;  // called on the gate's thread
  ConnectionGate(GateOptions options, Dispatch dispatch);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // A new connection (fresh = true: its head must arrive within head_timeout) or one between
  // requests (idle_timeout until its next request starts). Dispatched once its head is in.
  void wait_for_request(Connection connection, bool fresh);
  // Stop sending, drain what the client still sends for `linger`, then close.
  void close_gracefully(int fd);
  // Closes every socket held and joins the thread; later calls close what they are given.
  void stop();
  size_t waiting() const;

 private:
  enum class Phase { Idle, Head, Linger };
  struct Waiting {
    Connection connection;
    Phase phase = Phase::Idle;
    std::chrono::steady_clock::time_point deadline;
  };
  void run();
  void watch(Waiting waiting);
  void on_readable(int fd);
  void check_head(Waiting& waiting);
  void expire(std::chrono::steady_clock::time_point now);
  void release(int fd);  // forget fd (it was closed or dispatched)
  bool make_room();
  void wake();
  int wait_ms() const;

  GateOptions options_;
  Dispatch dispatch_;
  int epoll_ = -1;
  int wake_fd_ = -1;
  mutable std::mutex mutex_;
  std::unordered_map<int, Waiting> waiting_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace drift::server
