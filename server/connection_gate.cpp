#include "server/connection_gate.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "server/api_error.h"

namespace drift::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kHeadEnd = "\r\n\r\n";
// A complete response with an OpenAI-style error body, for the few the gate writes itself.
std::string error_response(int status, std::string_view reason, std::string message) {
  const std::string body = error_json(ApiError(status, std::move(message))).dump();
  return fmt::format(
      "HTTP/1.1 {} {}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", status,
      reason, body.size(), body);
}

// Best effort: the client may be gone, and a full socket buffer is not worth waiting for.
void send_now(int fd, std::string_view text) {
  (void)::send(fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

// What has arrived on fd (not consumed), up to `limit` bytes; -1 at end of stream or on error.
ptrdiff_t peek(int fd, std::string& out, size_t limit) {
  out.resize(limit);
  const ssize_t n = ::recv(fd, out.data(), limit, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    out.clear();
    return 0;
  }
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return n > 0 ? n : -1;
}

// Reads and discards what fd has, up to `budget` bytes. False at end of stream or on error.
bool drain(int fd, size_t budget) {
  char buf[16384];
  while (budget > 0) {
    const ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), budget), MSG_DONTWAIT);
    if (n > 0) {
      budget -= static_cast<size_t>(n);
      continue;
    }
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  return true;
}

}  // namespace

ConnectionGate::ConnectionGate(GateOptions options, Dispatch dispatch)
    : options_(options), dispatch_(std::move(dispatch)) {
  epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ < 0 || wake_fd_ < 0)
    fail("drift serve: cannot create the connection gate's epoll: {}", std::strerror(errno));
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = wake_fd_;
  ::epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_fd_, &event);
  thread_ = std::thread([this] { run(); });
}

ConnectionGate::~ConnectionGate() {
  stop();
  ::close(epoll_);
  ::close(wake_fd_);
}

void ConnectionGate::wait_for_request(Connection connection, bool fresh) {
  // Pipelined: the next head is already here, so there is nothing to wait for.
  if (connection.pending.find(kHeadEnd) != std::string::npos) {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return (void)::close(connection.fd);  // the HTTP threads are stopping too
    }
    return dispatch_(std::move(connection));
  }
  Waiting waiting;
  waiting.phase = fresh || !connection.pending.empty() ? Phase::Head : Phase::Idle;
  waiting.deadline = Clock::now() + (waiting.phase == Phase::Head ? options_.head_timeout : options_.idle_timeout);
  waiting.connection = std::move(connection);
  watch(std::move(waiting));
}

void ConnectionGate::close_gracefully(int fd) {
  ::shutdown(fd, SHUT_WR);  // the response is complete: the client sees the end of it
  Waiting waiting;
  waiting.connection.fd = fd;
  waiting.phase = Phase::Linger;
  waiting.deadline = Clock::now() + options_.linger;
  watch(std::move(waiting));
}

void ConnectionGate::watch(Waiting waiting) {
  const int fd = waiting.connection.fd;
  {
    std::lock_guard lock(mutex_);
    const bool full = waiting_.size() >= options_.max_connections && !make_room();
    if (full && waiting.phase == Phase::Head)
      send_now(fd, error_response(503, "Service Unavailable",
                                  fmt::format("the server holds its maximum of {} connections; retry later",
                                              options_.max_connections)));
    if (!stopped_ && !full) {
      waiting_[fd] = std::move(waiting);
      epoll_event event{};
      event.events = EPOLLIN | EPOLLRDHUP | EPOLLET;  // edge-triggered: one wake per arrival
      event.data.fd = fd;
      if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) == 0) {
        wake();  // its deadline may be the earliest now
        return;
      }
      waiting_.erase(fd);
    }
  }
  ::close(fd);
}

void ConnectionGate::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    wake();
  }
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, waiting] : waiting_) ::close(fd);
  waiting_.clear();
}

size_t ConnectionGate::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_.size();
}

void ConnectionGate::wake() {
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof(one));
}

int ConnectionGate::wait_ms() const {
  std::lock_guard lock(mutex_);
  if (waiting_.empty()) return -1;
  auto first = Clock::time_point::max();
  for (const auto& [fd, waiting] : waiting_) first = std::min(first, waiting.deadline);
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(first - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
}

void ConnectionGate::run() {
  std::vector<epoll_event> events(64);
  for (;;) {
    const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), wait_ms());
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wake_fd_) {
        uint64_t count = 0;
        (void)::read(wake_fd_, &count, sizeof(count));
      } else {
        on_readable(events[i].data.fd);
      }
    }
    expire(Clock::now());
  }
}

void ConnectionGate::on_readable(int fd) {
  std::unique_lock lock(mutex_);
  auto it = waiting_.find(fd);
  if (it == waiting_.end()) return;
  Waiting& waiting = it->second;
  if (waiting.phase == Phase::Linger) {
    // Bounded per wake so one fast uploader cannot hold the gate; the deadline ends it anyway.
    if (!drain(fd, 1u << 20)) release(fd);
    return;
  }
  std::string head;
  if (peek(fd, head, options_.max_head_bytes + 1) < 0 && waiting.connection.pending.empty()) return release(fd);
  head.insert(0, waiting.connection.pending);
  if (head.find(kHeadEnd) != std::string::npos) {
    Connection ready = std::move(waiting.connection);
    ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    waiting_.erase(it);
    lock.unlock();
    return dispatch_(std::move(ready));
  }
  if (head.size() > options_.max_head_bytes) {
    send_now(fd, error_response(431, "Request Header Fields Too Large",
                                fmt::format("the request line and headers exceed {} bytes", options_.max_head_bytes)));
    ::shutdown(fd, SHUT_WR);
    waiting.phase = Phase::Linger;
    waiting.deadline = Clock::now() + options_.linger;
    return;
  }
  if (waiting.phase == Phase::Idle && !head.empty()) {
    waiting.phase = Phase::Head;  // the next request has begun: it has head_timeout to finish its head
    waiting.deadline = Clock::now() + options_.head_timeout;
  }
}

void ConnectionGate::expire(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  std::vector<int> expired;
  for (auto& [fd, waiting] : waiting_)
    if (waiting.deadline <= now) expired.push_back(fd);
  for (int fd : expired) {
    Waiting& waiting = waiting_[fd];
    if (waiting.phase != Phase::Head) {
      release(fd);
      continue;
    }
    // A head begun but not finished in time: say so, then close gracefully.
    send_now(fd, error_response(408, "Request Timeout",
                                fmt::format("the request's line and headers did not arrive within {} ms",
                                            options_.head_timeout.count())));
    ::shutdown(fd, SHUT_WR);
    waiting.phase = Phase::Linger;
    waiting.deadline = now + options_.linger;
  }
}

// Caller holds mutex_. Drops the connection nearest its deadline among those waiting for
// nothing (idle between requests: its client reconnects; lingering: its response is sent).
// False when every connection is mid-head.
bool ConnectionGate::make_room() {
  auto victim = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (it->second.phase != Phase::Head && (victim == waiting_.end() || it->second.deadline < victim->second.deadline))
      victim = it;
  if (victim == waiting_.end()) return false;
  release(victim->first);
  return true;
}

// Caller holds mutex_.
void ConnectionGate::release(int fd) {
  ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  waiting_.erase(fd);
}

}  // namespace drift::server
