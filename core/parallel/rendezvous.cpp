#include "core/parallel/rendezvous.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/parallel/byte_stream.h"

namespace drift {
namespace {

constexpr uint64_t kHelloMagic = 0x70742d7466697264ull;  // "drift-tp"
// Bumped whenever a frame's contents change: ranks of different builds refuse each other.
constexpr uint32_t kProtocolVersion = 1;

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

AddrInfoPtr resolve(const RendezvousAddress& address, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    fail("tensor parallel rendezvous {}: cannot resolve the host: {}", address.text(), gai_strerror(rc));
  return AddrInfoPtr(found);
}

std::vector<uint8_t> hello_bytes(int rank, int size) {
  ByteWriter w;
  w.put(kHelloMagic);
  w.put(kProtocolVersion);
  w.put<int32_t>(rank);
  w.put<int32_t>(size);
  return std::move(w.bytes());
}

// What a connection said in its hello.
struct Hello {
  int rank = -1;
  int size = 0;
};

// The hello of a drift rank, or nullopt (logged) for a connection that is not one: a port scan, a
// health probe or a build speaking another protocol must not end the engine's startup.
std::optional<Hello> read_hello(FramedSocket& socket, const std::string& where) {
  try {
    const std::vector<uint8_t> bytes = socket.receive(FrameTag::kHello, std::chrono::seconds(2));
    ByteReader r(bytes);
    if (bytes.size() != 20 || r.get<uint64_t>() != kHelloMagic) {
      spdlog::warn("tensor parallel rendezvous {}: a connection that is not a drift rank was closed", where);
      return std::nullopt;
    }
    if (const auto version = r.get<uint32_t>(); version != kProtocolVersion) {
      spdlog::warn(
          "tensor parallel rendezvous {}: a rank speaking protocol {} (this build speaks {}) was closed: run the same "
          "drift build on every rank",
          where, version, kProtocolVersion);
      return std::nullopt;
    }
    Hello hello;
    hello.rank = r.get<int32_t>();
    hello.size = r.get<int32_t>();
    return hello;
  } catch (const DriftError& e) {
    spdlog::warn("tensor parallel rendezvous {}: a connection was closed before its hello: {}", where, e.what());
    return std::nullopt;
  }
}

// A drift rank started for another engine, or twice, is the operator's mistake: it ends startup.
void check_hello(const Hello& hello, int size, const std::vector<FramedSocket>& links, const std::string& where) {
  if (hello.size != size)
    fail("tensor parallel rendezvous {}: rank {} was started for tensor_parallel_size = {}, this engine has {}", where,
         hello.rank, hello.size, size);
  if (hello.rank < 1 || hello.rank >= size)
    fail("tensor parallel rendezvous {}: a rank numbered {} joined; ranks 1 to {} are expected", where, hello.rank,
         size - 1);
  if (links[hello.rank].connected()) fail("tensor parallel rendezvous {}: rank {} joined twice", where, hello.rank);
}

// connect() within the deadline (a blocking connect to an unreachable host waits minutes).
bool connect_before(int fd, const addrinfo* a, std::chrono::steady_clock::time_point deadline, std::string& why) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      why = std::strerror(errno);
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) {
      why = "timed out";
      return false;
    }
    int error = 0;
    socklen_t len = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      why = std::strerror(error);
      return false;
    }
  }
  fcntl(fd, F_SETFL, flags);
  return true;
}

}  // namespace

std::string RendezvousAddress::text() const { return fmt::format("{}:{}", host, port); }

RendezvousAddress parse_rendezvous_address(const std::string& text, const std::string& what) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    fail("{} = \"{}\": expected HOST:PORT (e.g. \"127.0.0.1:0\"; port 0 picks a free one)", what, text);
  RendezvousAddress address;
  address.host = text.substr(0, colon);
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']')
    address.host = address.host.substr(1, address.host.size() - 2);  // [::1]:port
  const std::string port = text.substr(colon + 1);
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), address.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || address.port < 0 || address.port > 65535)
    fail("{} = \"{}\": the port '{}' is not a number in [0, 65535]", what, text, port);
  return address;
}

RendezvousListener::RendezvousListener(const RendezvousAddress& address) : address_text_(address.text()) {
  const AddrInfoPtr info = resolve(address, true);
  std::string why = "no address";
  for (addrinfo* a = info.get(); a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 64) == 0) {
      fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  if (fd_ < 0) fail("tensor parallel rendezvous {}: cannot listen there: {}", address_text_, why);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

RendezvousListener::~RendezvousListener() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<FramedSocket> RendezvousListener::accept_ranks(int size, std::chrono::milliseconds timeout,
                                                           const std::function<void()>& check_alive) {
  std::vector<FramedSocket> links(size);
  int joined = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (joined < size - 1) {
    if (check_alive) check_alive();
    if (std::chrono::steady_clock::now() >= deadline) {
      std::vector<int> missing;
      for (int r = 1; r < size; ++r)
        if (!links[r].connected()) missing.push_back(r);
      fail("tensor parallel rendezvous {}: rank(s) {} did not join within {} s", address_text_,
           fmt::join(missing, ", "), timeout.count() / 1000);
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // 100 ms: check the started ranks are alive between waits
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    configure_link(fd);
    FramedSocket socket(fd, -1);
    const std::optional<Hello> hello = read_hello(socket, address_text_);
    if (!hello) continue;
    check_hello(*hello, size, links, address_text_);
    socket.set_peer(hello->rank);
    links[hello->rank] = std::move(socket);
    ++joined;
  }
  return links;
}

FramedSocket join_rendezvous(const RendezvousAddress& address, int rank, int size, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string why;
  while (std::chrono::steady_clock::now() < deadline) {
    AddrInfoPtr info;
    try {
      info = resolve(address, false);
    } catch (const DriftError& e) {  // the name may not resolve yet (a machine still coming up)
      why = e.what();
    }
    for (addrinfo* a = info.get(); a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (connect_before(fd, a, deadline, why)) {
        configure_link(fd);
        FramedSocket socket(fd, 0);
        socket.send(FrameTag::kHello, hello_bytes(rank, size), std::chrono::seconds(10));
        return socket;
      }
      ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 0 may not listen yet
  }
  fail("tensor parallel rank {}: cannot reach rank 0's rendezvous at {} within {} s: {}", rank, address.text(),
       timeout.count() / 1000, why);
}

}  // namespace drift
