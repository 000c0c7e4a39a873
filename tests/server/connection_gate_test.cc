// ConnectionGate over socketpairs: a connection is dispatched only once its whole head has
// arrived (however slowly), pipelined heads at once; a head not done in time gets 408, one too
// large 431; an idle connection is closed; a graceful close lets the client read the response.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/connection_gate.h"

namespace drift::server {
namespace {

using namespace std::chrono_literals;

struct Dispatched {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Connection> connections;

  bool wait_for(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, timeout, [&] { return connections.size() >= n; });
  }
  ~Dispatched() {
    for (const Connection& c : connections) ::close(c.fd);
  }
};

struct Pair {
  int client = -1;
  int server = -1;
  Pair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    client = fds[0];
    server = fds[1];
  }
  ~Pair() { ::close(client); }
  mutable bool eof = false;  // the last read_all ended because the server closed
  void send(const std::string& text) const {
    ASSERT_EQ(::write(client, text.data(), text.size()), ssize_t(text.size()));
  }
  // Everything the server sends until it closes (or `timeout` passes).
  std::string read_all(std::chrono::milliseconds timeout = 3s) const {
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(client, buf, sizeof(buf))) > 0) out.append(buf, n);
    eof = n == 0;
    return out;
  }
};

GateOptions fast_options() {
  GateOptions o;
  o.head_timeout = 400ms;
  o.idle_timeout = 300ms;
  o.linger = 300ms;
  o.max_head_bytes = 1024;
  return o;
}

TEST(ConnectionGate, ATrickledHeadIsDispatchedOnlyOnceComplete) {
  Dispatched d;
  ConnectionGate gate(fast_options(), [&](Connection c) {
    std::lock_guard lock(d.mutex);
    d.connections.push_back(std::move(c));
    d.cv.notify_all();
  });
  Pair p;
  gate.wait_for_request(Connection{p.server, "", 0}, true);
  for (const char* piece : {"GET /health", " HTTP/1.1\r\n", "Host: x\r\n", "\r"}) {
    p.send(piece);
    EXPECT_FALSE(d.wait_for(1, 50ms)) << "dispatched before the blank line";
  }
  p.send("\n");
  ASSERT_TRUE(d.wait_for(1, 1s));
  EXPECT_EQ(d.connections[0].fd, p.server);
  EXPECT_EQ(gate.waiting(), 0u);
  // The head was only peeked at: it is all still there for the HTTP thread to read.
  char buf[64];
  EXPECT_EQ(::recv(p.server, buf, sizeof(buf), MSG_DONTWAIT),
            ssize_t(std::string("GET /health HTTP/1.1\r\nHost: x\r\n\r\n").size()));
}

TEST(ConnectionGate, APipelinedHeadIsDispatchedAtOnce) {
  Dispatched d;
  ConnectionGate gate(fast_options(), [&](Connection c) {
    std::lock_guard lock(d.mutex);
    d.connections.push_back(std::move(c));
    d.cv.notify_all();
  });
  Pair p;
  gate.wait_for_request(Connection{p.server, "GET / HTTP/1.1\r\n\r\n", 3}, false);
  ASSERT_TRUE(d.wait_for(1, 100ms));
  EXPECT_EQ(d.connections[0].pending, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(d.connections[0].served, 3u);
}

TEST(ConnectionGate, AHeadNotDoneInTimeGets408AndIdleConnectionsAreClosed) {
  Dispatched d;
  ConnectionGate gate(fast_options(), [&](Connection c) {
    std::lock_guard lock(d.mutex);
    d.connections.push_back(std::move(c));
  });
  Pair slow, idle;
  gate.wait_for_request(Connection{slow.server, "", 0}, true);
  gate.wait_for_request(Connection{idle.server, "", 1}, false);
  const auto start = std::chrono::steady_clock::now();
  slow.send("GET /health HTTP/1.1\r\n");
  const std::string reply = slow.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 408 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("\"code\":null"), std::string::npos) << reply;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(idle.read_all(), "");  // closed without a word once idle too long
  EXPECT_TRUE(idle.eof);
  EXPECT_TRUE(d.connections.empty());
  std::this_thread::sleep_for(500ms);  // the 408'd connection lingers 300 ms, then is closed
  EXPECT_EQ(gate.waiting(), 0u);
}

TEST(ConnectionGate, AHeadTooLargeGets431) {
  ConnectionGate gate(fast_options(), [](Connection c) { ::close(c.fd); });
  Pair p;
  gate.wait_for_request(Connection{p.server, "", 0}, true);
  p.send("GET / HTTP/1.1\r\nX-Big: " + std::string(2000, 'x'));
  const std::string reply = p.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 431 ", 0), 0u) << reply;
}

TEST(ConnectionGate, AGracefulCloseDrainsTheClientsUploadSoItReadsTheResponse) {
  ConnectionGate gate(fast_options(), [](Connection c) { ::close(c.fd); });
  Pair p;
  // An upload larger than a socketpair's buffer, sent from its own thread: until the gate drains
  // it, the write blocks (a socketpair's buffer can hold less than 100 KB), and part of it is
  // unread in the server's buffer when the response goes out. MSG_NOSIGNAL: should the gate close
  // before the upload ends, the write fails instead of killing the test with SIGPIPE.
  const std::string upload(100000, 'a');
  std::thread uploader([&] {
    for (size_t sent = 0; sent < upload.size();) {
      const ssize_t n = ::send(p.client, upload.data() + sent, upload.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
  });
  std::this_thread::sleep_for(50ms);  // the server's buffer fills
  const std::string response = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n";
  EXPECT_EQ(::write(p.server, response.data(), response.size()), ssize_t(response.size()));
  gate.close_gracefully(p.server);
  EXPECT_EQ(p.read_all(), response);
  EXPECT_TRUE(p.eof);
  uploader.join();
}

TEST(ConnectionGate, StopClosesWhatItHolds) {
  Pair p;
  {
    ConnectionGate gate(fast_options(), [](Connection c) { ::close(c.fd); });
    gate.wait_for_request(Connection{p.server, "", 0}, true);
    gate.stop();
    EXPECT_EQ(gate.waiting(), 0u);
  }
  EXPECT_EQ(p.read_all(500ms), "");
  EXPECT_TRUE(p.eof);
}

TEST(ConnectionGate, WhenFullTheOldestIdleConnectionMakesRoomAndNewcomersAreRefusedOnlyIfNoneIs) {
  GateOptions options = fast_options();
  options.idle_timeout = 5s;  // nothing expires during the test
  options.head_timeout = 5s;
  options.max_connections = 2;
  ConnectionGate gate(options, [](Connection c) { ::close(c.fd); });
  Pair older, newer, fresh1, fresh2;
  gate.wait_for_request(Connection{older.server, "", 1}, false);
  std::this_thread::sleep_for(10ms);  // a later deadline
  gate.wait_for_request(Connection{newer.server, "", 1}, false);
  gate.wait_for_request(Connection{fresh1.server, "", 0}, true);
  EXPECT_EQ(older.read_all(300ms), "");
  EXPECT_TRUE(older.eof) << "the oldest idle connection was not dropped";
  EXPECT_EQ(gate.waiting(), 2u);
  gate.wait_for_request(Connection{fresh2.server, "", 0}, true);  // drops `newer`, the last idle one
  EXPECT_TRUE((newer.read_all(300ms), newer.eof));
  // Every connection held is mid-head: a newcomer is told so and closed.
  Pair refused;
  gate.wait_for_request(Connection{refused.server, "", 0}, true);
  const std::string reply = refused.read_all();
  EXPECT_EQ(reply.rfind("HTTP/1.1 503 ", 0), 0u) << reply;
  EXPECT_TRUE(refused.eof);
  EXPECT_EQ(gate.waiting(), 2u);
  fresh1.send("GET / HTTP/1.1\r\n\r\n");  // the held ones still work: dispatched
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(gate.waiting(), 1u);
}

}  // namespace
}  // namespace drift::server
