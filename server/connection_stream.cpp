#include "server/connection_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace drift::server {
namespace {

constexpr size_t kReadChunk = 4096;

// Waits until fd is ready for `events` or `ms` pass (EINTR retried with the full wait: harmless).
bool poll_for(int fd, short events, int64_t ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, static_cast<int>(std::clamp<int64_t>(ms, 0, 1'000'000)));
    if (n >= 0) return n > 0;
    if (errno != EINTR) return false;
  }
}

void ip_and_port(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text));
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text));
    port = ntohs(a.sin6_port);
  }
  ip = text;
}

}  // namespace

ConnectionStream::ConnectionStream(int fd, std::string pending, Clock::time_point read_deadline,
                                   std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout,
                                   size_t read_budget)
    : fd_(fd),
      buffer_(std::move(pending)),
      read_deadline_(read_deadline),
      read_timeout_(read_timeout),
      write_timeout_(write_timeout),
      read_budget_(read_budget) {}

bool ConnectionStream::wait_readable() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(read_deadline_ - Clock::now());
  if (left.count() <= 0) return false;
  return poll_for(fd_, POLLIN, std::min(left, read_timeout_).count());
}

bool ConnectionStream::is_readable() const { return offset_ < buffer_.size() || wait_readable(); }

// As httplib's: writable within the timeout, and the peer has not closed the connection (a
// peek reads nothing away; a pipelined request keeps it "alive").
bool ConnectionStream::is_writable() const {
  if (!poll_for(fd_, POLLOUT, write_timeout_.count())) return false;
  if (!poll_for(fd_, POLLIN, 0)) return true;
  char byte;
  return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

// Never more than the budget left: the bytes past it stay unread, and the request fails.
ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (consumed_ >= read_budget_) {
    budget_spent_ = true;
    return -1;
  }
  const ssize_t n = read_unbudgeted(ptr, std::min(size, read_budget_ - consumed_));
  if (n > 0) consumed_ += static_cast<size_t>(n);
  return n;
}

ssize_t ConnectionStream::read_unbudgeted(char* ptr, size_t size) {
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
    if (!wait_readable()) return -1;
    // Small reads (httplib's line reader asks for one byte) come from a chunk read ahead.
    if (size >= kReadChunk) {
      const ssize_t n = ::recv(fd_, ptr, size, 0);
      return n < 0 ? -1 : n;
    }
    buffer_.resize(kReadChunk);
    const ssize_t n = ::recv(fd_, buffer_.data(), kReadChunk, 0);
    buffer_.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (n <= 0) return n < 0 ? -1 : 0;
  }
  const size_t n = std::min(size, buffer_.size() - offset_);
  std::memcpy(ptr, buffer_.data() + offset_, n);
  offset_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  if (!is_writable()) return -1;
  const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  return n < 0 ? -1 : n;
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip_and_port(addr, ip, port);
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) ip_and_port(addr, ip, port);
}

std::string ConnectionStream::take_unread() {
  std::string rest = buffer_.substr(offset_);
  buffer_.clear();
  offset_ = 0;
  return rest;
}

}  // namespace drift::server
