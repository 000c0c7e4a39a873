#pragma once
// FramedSocket: one TCP connection between two tensor-parallel ranks, carrying tagged frames
// (a tag, a length, the bytes). Every wait has a deadline, and every failure -- the peer closed
// the connection, sent an error, or sent nothing in time -- throws DriftError naming the peer's
// rank, so a dead or hung rank ends the engine with a clear error instead of a silent hang.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace drift {

enum class FrameTag : uint32_t {
  kHello = 1,    // a rank joining: its rank and the engine's size (rendezvous)
  kSetup = 2,    // rank 0 -> rank: what to load (RankSetup)
  kReady = 3,    // rank -> rank 0: loaded
  kCommand = 4,  // rank 0 -> rank: a step-plan command (core/parallel/step_plan.h)
  kReduce = 5,   // all_reduce_sum's partial sums and result
  kGather = 6,   // gather's rows
  kError = 7,    // the sender failed; the bytes say why
};
const char* frame_tag_name(FrameTag tag);

// The largest frame of each kind a rank accepts, checked before anything is allocated for it.
uint64_t max_frame_bytes(FrameTag tag);

// A connected link's options: no Nagle delay (a step is many small frames) and TCP keepalive, so a
// rank whose peer's machine died or became unreachable notices within about half a minute even
// while it waits for the next step with no deadline.
void configure_link(int fd);

class FramedSocket {
 public:
  // Waits with no deadline (a rank waiting for the next step while the engine is idle).
  static constexpr std::chrono::milliseconds kForever{-1};

  FramedSocket() = default;
  // Takes ownership of a connected socket; `peer` names the rank at the other end in errors.
  FramedSocket(int fd, int peer);
  FramedSocket(FramedSocket&& other) noexcept;
  FramedSocket& operator=(FramedSocket&& other) noexcept;
  FramedSocket(const FramedSocket&) = delete;
  FramedSocket& operator=(const FramedSocket&) = delete;
  ~FramedSocket();

  bool connected() const { return fd_ >= 0; }
  int peer() const { return peer_; }
  void set_peer(int peer) { peer_ = peer; }
  void close();

  void send(FrameTag tag, std::span<const uint8_t> bytes, std::chrono::milliseconds timeout);
  // The next frame's bytes, which must carry `tag`: an error frame throws its message, another tag
  // or a length past the tag's bound (kMaxFrameBytes) is a protocol error. The frame must start
  // within `timeout` (kForever: however long) and its bytes then arrive within `body_timeout`.
  std::vector<uint8_t> receive(FrameTag tag, std::chrono::milliseconds timeout);
  std::vector<uint8_t> receive(FrameTag tag, std::chrono::milliseconds timeout, std::chrono::milliseconds body_timeout);
  // receive into a buffer of exactly dst.size() bytes (no copy for the collectives' payloads).
  void receive_into(FrameTag tag, std::span<uint8_t> dst, std::chrono::milliseconds timeout);
  // Best effort: tells the peer why this side stops (never throws).
  void send_error(const std::string& message) noexcept;

 private:
  struct Header {
    uint32_t tag;
    uint32_t reserved;
    uint64_t length;
  };
  Header receive_header(FrameTag tag, std::chrono::milliseconds timeout);
  void write_all(const uint8_t* data, size_t n, std::chrono::steady_clock::time_point deadline, bool forever);
  void read_all(uint8_t* data, size_t n, std::chrono::steady_clock::time_point deadline, bool forever);
  [[noreturn]] void fail_peer(const std::string& what) const;

  int fd_ = -1;
  int peer_ = -1;
};

}  // namespace drift
