#pragma once
// The ranks' rendezvous (docs/tensor_parallel.md): rank 0 listens on a TCP address; every other
// rank connects and says hello (its rank, the engine's size, the protocol version), and rank 0 takes the
// connections in as the ranks' links. A GPU build would pass NCCL's unique id over the same links.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "core/parallel/framed_socket.h"

namespace drift {

// "host:port" (port 0 on rank 0: any free port). Throws DriftError naming `what` (the key or flag).
struct RendezvousAddress {
  std::string host;
  int port = 0;
  std::string text() const;
};
RendezvousAddress parse_rendezvous_address(const std::string& text, const std::string& what);

class RendezvousListener {
 public:
  // Binds and listens; throws DriftError naming the address when it cannot.
  explicit RendezvousListener(const RendezvousAddress& address);
  ~RendezvousListener();
  RendezvousListener(const RendezvousListener&) = delete;
  RendezvousListener& operator=(const RendezvousListener&) = delete;
  // The port bound (the one chosen when the address asked for 0).
  int port() const { return port_; }
  // Waits for ranks 1 .. size - 1 to join, until `timeout`; links[r] is rank r's connection.
  // `check_alive` runs while waiting (it throws when a rank this process started has exited).
  // Throws DriftError naming the ranks still missing, or what a joining rank got wrong.
  std::vector<FramedSocket> accept_ranks(int size, std::chrono::milliseconds timeout,
                                         const std::function<void()>& check_alive);

 private:
  int fd_ = -1;
  int port_ = 0;
  std::string address_text_;
};

// A rank's connection to rank 0: connects (retrying while rank 0 is not listening yet, until
// `timeout`) and says hello.
FramedSocket join_rendezvous(const RendezvousAddress& address, int rank, int size, std::chrono::milliseconds timeout);

}  // namespace drift
