#pragma once
// TcpCommunicator: the CPU backend's collectives over TCP, ranks as processes (on one machine or
// several, by the same path). A star around rank 0: the others send it their part, it combines
// them in rank order and sends the result back, so the sum is deterministic and every rank gets
// the same bits. Sized for correctness and CI, not speed; GPUs use NCCL.
#include <chrono>
#include <vector>

#include "core/parallel/communicator.h"
#include "core/parallel/framed_socket.h"

namespace drift {

class TcpCommunicator final : public Communicator {
 public:
  // Rank 0: `peers[r]` is the connection to rank r (peers[0] unused). Other ranks: `peers` holds
  // one connection, to rank 0. `timeout`: how long any collective waits for a rank.
  TcpCommunicator(int rank, int size, std::vector<FramedSocket> peers, std::chrono::milliseconds timeout);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void all_reduce_sum(std::span<float> data) override;
  std::vector<std::vector<float>> gather(std::span<const float> data) override;
  void broadcast(std::vector<uint8_t>& bytes) override;

  // Rank 0's connection to rank r, or another rank's to rank 0 (for the step plan's frames).
  FramedSocket& link(int peer);
  std::chrono::milliseconds timeout() const { return timeout_; }
  // Waits for rank 0's next broadcast however long the engine stays idle (a rank's command loop).
  void broadcast_wait_forever(std::vector<uint8_t>& bytes);

 private:
  void broadcast_with(std::vector<uint8_t>& bytes, std::chrono::milliseconds wait);

  int rank_, size_;
  std::vector<FramedSocket> peers_;
  std::chrono::milliseconds timeout_;
};

}  // namespace drift
