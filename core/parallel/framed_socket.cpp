#include "core/parallel/framed_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace drift {

const char* frame_tag_name(FrameTag tag) {
  switch (tag) {
    case FrameTag::kHello:
      return "hello";
    case FrameTag::kSetup:
      return "setup";
    case FrameTag::kReady:
      return "ready";
    case FrameTag::kCommand:
      return "command";
    case FrameTag::kReduce:
      return "all-reduce";
    case FrameTag::kGather:
      return "gather";
    case FrameTag::kError:
      return "error";
  }
  return "unknown";
}

uint64_t max_frame_bytes(FrameTag tag) {
  switch (tag) {
    case FrameTag::kHello:
      return 64;
    case FrameTag::kReady:
      return 64;
    case FrameTag::kError:
      return 64 << 10;
    case FrameTag::kSetup:
      return 1 << 20;
    // A forward's plan, partial sums and logit columns: bounded by the step's tokens and the
    // vocabulary, far below this.
    case FrameTag::kCommand:
    case FrameTag::kReduce:
    case FrameTag::kGather:
      return uint64_t{16} << 30;
  }
  return 0;
}

void configure_link(int fd) {
  const int one = 1, idle = 10, interval = 5, probes = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

FramedSocket::FramedSocket(int fd, int peer) : fd_(fd), peer_(peer) {}
FramedSocket::FramedSocket(FramedSocket&& other) noexcept : fd_(other.fd_), peer_(other.peer_) { other.fd_ = -1; }
FramedSocket& FramedSocket::operator=(FramedSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    peer_ = other.peer_;
    other.fd_ = -1;
  }
  return *this;
}
FramedSocket::~FramedSocket() { close(); }

void FramedSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void FramedSocket::fail_peer(const std::string& what) const { fail("tensor parallel rank {} {}", peer_, what); }

namespace {

// Milliseconds left before the deadline (at least 0), or -1 (no deadline) for poll().
int poll_timeout(std::chrono::steady_clock::time_point deadline, bool forever) {
  if (forever) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  return std::chrono::steady_clock::now() + timeout;
}

}  // namespace

void FramedSocket::write_all(const uint8_t* data, size_t n, std::chrono::steady_clock::time_point deadline,
                             bool forever) {
  while (n > 0) {
    pollfd p{fd_, POLLOUT, 0};
    const int ready = ::poll(&p, 1, poll_timeout(deadline, forever));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail_peer(fmt::format("cannot be written to: {}", std::strerror(errno)));
    if (ready == 0) fail_peer("stopped reading: the engine's step timed out waiting for it (is it hung?)");
    // Non-blocking: a send waits only in poll(), where the deadline holds, never for a peer that
    // stopped reading.
    const ssize_t sent = ::send(fd_, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (sent < 0) fail_peer(fmt::format("closed its connection ({}): it exited or crashed", std::strerror(errno)));
    data += sent;
    n -= static_cast<size_t>(sent);
  }
}

void FramedSocket::read_all(uint8_t* data, size_t n, std::chrono::steady_clock::time_point deadline, bool forever) {
  while (n > 0) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, poll_timeout(deadline, forever));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) fail_peer(fmt::format("cannot be read from: {}", std::strerror(errno)));
    if (ready == 0) fail_peer("sent nothing in time: the engine's step timed out waiting for it (is it hung?)");
    const ssize_t got = ::recv(fd_, data, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (got <= 0) fail_peer("closed its connection: it exited or crashed");
    data += got;
    n -= static_cast<size_t>(got);
  }
}

void FramedSocket::send(FrameTag tag, std::span<const uint8_t> bytes, std::chrono::milliseconds timeout) {
  DRIFT_CHECK(fd_ >= 0, "sending to rank {} after its connection closed", peer_);
  const bool forever = timeout == kForever;
  const auto deadline = deadline_after(forever ? std::chrono::milliseconds(0) : timeout);
  const Header header{static_cast<uint32_t>(tag), 0, bytes.size()};
  write_all(reinterpret_cast<const uint8_t*>(&header), sizeof(header), deadline, forever);
  write_all(bytes.data(), bytes.size(), deadline, forever);
}

FramedSocket::Header FramedSocket::receive_header(FrameTag tag, std::chrono::milliseconds timeout) {
  DRIFT_CHECK(fd_ >= 0, "receiving from rank {} after its connection closed", peer_);
  const bool forever = timeout == kForever;
  const auto deadline = deadline_after(forever ? std::chrono::milliseconds(0) : timeout);
  Header header{};
  read_all(reinterpret_cast<uint8_t*>(&header), sizeof(header), deadline, forever);
  if (header.tag == static_cast<uint32_t>(FrameTag::kError)) {
    if (header.length > max_frame_bytes(FrameTag::kError))
      fail_peer(fmt::format("sent an error frame of {} bytes: not a drift rank, or the ranks are out of step",
                            header.length));
    std::string why(header.length, '\0');
    read_all(reinterpret_cast<uint8_t*>(why.data()), why.size(), deadline_after(std::chrono::seconds(5)), false);
    fail_peer("failed: " + why);
  }
  if (header.tag != static_cast<uint32_t>(tag))
    fail_peer(fmt::format("sent a {} frame where a {} frame was due: the ranks are out of step",
                          frame_tag_name(static_cast<FrameTag>(header.tag)), frame_tag_name(tag)));
  if (header.length > max_frame_bytes(tag))
    fail_peer(
        fmt::format("sent a {} frame of {} bytes, more than the {} such a frame may have: not a drift rank, or "
                    "the ranks are out of step",
                    frame_tag_name(tag), header.length, max_frame_bytes(tag)));
  return header;
}

std::vector<uint8_t> FramedSocket::receive(FrameTag tag, std::chrono::milliseconds timeout) {
  return receive(tag, timeout, timeout);
}

std::vector<uint8_t> FramedSocket::receive(FrameTag tag, std::chrono::milliseconds timeout,
                                           std::chrono::milliseconds body_timeout) {
  const Header header = receive_header(tag, timeout);
  std::vector<uint8_t> bytes(header.length);
  const bool forever = body_timeout == kForever;
  read_all(bytes.data(), bytes.size(), deadline_after(forever ? std::chrono::milliseconds(0) : body_timeout), forever);
  return bytes;
}

void FramedSocket::receive_into(FrameTag tag, std::span<uint8_t> dst, std::chrono::milliseconds timeout) {
  const Header header = receive_header(tag, timeout);
  if (header.length != dst.size())
    fail_peer(fmt::format("sent {} bytes of {} where {} were due: the ranks are out of step", header.length,
                          frame_tag_name(tag), dst.size()));
  const bool forever = timeout == kForever;
  read_all(dst.data(), dst.size(), deadline_after(forever ? std::chrono::milliseconds(0) : timeout), forever);
}

void FramedSocket::send_error(const std::string& message) noexcept {
  try {
    if (fd_ >= 0)
      send(FrameTag::kError, {reinterpret_cast<const uint8_t*>(message.data()), message.size()},
           std::chrono::seconds(5));
  } catch (...) {
  }
}

}  // namespace drift
