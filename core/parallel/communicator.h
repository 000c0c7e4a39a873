#pragma once
// Communicator: the collectives tensor parallelism needs between the ranks of one engine
// (docs/tensor_parallel.md). The CPU backend's is TcpCommunicator (core/parallel/
// tcp_communicator.h): ranks as processes, on one machine or several. Every call is collective:
// all ranks make the same calls in the same order (rank 0 sends each step's plan first, so they do).
// A rank that fails, exits or stops answering makes the call throw DriftError naming that rank.
#include <cstdint>
#include <span>
#include <vector>

namespace drift {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data = the sum of every rank's data, elementwise; every rank gets the same bits.
  virtual void all_reduce_sum(std::span<float> data) = 0;
  // Rank 0 gets every rank's data, in rank order (its own first); the others get nothing. Ranks
  // may send different lengths.
  virtual std::vector<std::vector<float>> gather(std::span<const float> data) = 0;
  // Rank 0's bytes to every rank: rank 0 passes them, the others receive them (their argument is
  // replaced).
  virtual void broadcast(std::vector<uint8_t>& bytes) = 0;
};

}  // namespace drift
