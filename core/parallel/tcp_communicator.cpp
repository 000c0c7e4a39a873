#include "core/parallel/tcp_communicator.h"

#include <cstring>

#include "core/error.h"

namespace drift {
namespace {

std::span<const uint8_t> bytes_of(std::span<const float> data) {
  return {reinterpret_cast<const uint8_t*>(data.data()), data.size_bytes()};
}
std::span<uint8_t> bytes_of(std::span<float> data) {
  return {reinterpret_cast<uint8_t*>(data.data()), data.size_bytes()};
}

}  // namespace

TcpCommunicator::TcpCommunicator(int rank, int size, std::vector<FramedSocket> peers, std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), peers_(std::move(peers)), timeout_(timeout) {
  DRIFT_CHECK(rank == 0 ? static_cast<int>(peers_.size()) == size : peers_.size() == 1,
              "rank {} of {} with {} connections", rank, size, peers_.size());
}

FramedSocket& TcpCommunicator::link(int peer) {
  DRIFT_CHECK(rank_ == 0 ? peer > 0 && peer < size_ : peer == 0, "rank {} has no link to rank {}", rank_, peer);
  return rank_ == 0 ? peers_[peer] : peers_[0];
}

// Rank 0 adds the others' parts in rank order ((x0 + x1) + x2 ...) and returns the sum to each.
void TcpCommunicator::all_reduce_sum(std::span<float> data) {
  if (size_ == 1) return;
  if (rank_ != 0) {
    link(0).send(FrameTag::kReduce, bytes_of(std::span<const float>(data)), timeout_);
    link(0).receive_into(FrameTag::kReduce, bytes_of(data), timeout_);
    return;
  }
  std::vector<float> part(data.size());
  for (int r = 1; r < size_; ++r) {
    link(r).receive_into(FrameTag::kReduce, bytes_of(std::span<float>(part)), timeout_);
    for (size_t i = 0; i < data.size(); ++i) data[i] += part[i];
  }
  for (int r = 1; r < size_; ++r) link(r).send(FrameTag::kReduce, bytes_of(std::span<const float>(data)), timeout_);
}

std::vector<std::vector<float>> TcpCommunicator::gather(std::span<const float> data) {
  if (rank_ != 0) {
    link(0).send(FrameTag::kGather, bytes_of(data), timeout_);
    return {};
  }
  std::vector<std::vector<float>> parts;
  parts.emplace_back(data.begin(), data.end());
  for (int r = 1; r < size_; ++r) {
    const std::vector<uint8_t> bytes = link(r).receive(FrameTag::kGather, timeout_);
    if (bytes.size() % sizeof(float) != 0)
      fail("tensor parallel rank {} sent {} bytes to gather, not whole floats", r, bytes.size());
    std::vector<float>& part = parts.emplace_back(bytes.size() / sizeof(float));
    std::memcpy(part.data(), bytes.data(), bytes.size());
  }
  return parts;
}

void TcpCommunicator::broadcast(std::vector<uint8_t>& bytes) { broadcast_with(bytes, timeout_); }
void TcpCommunicator::broadcast_wait_forever(std::vector<uint8_t>& bytes) {
  broadcast_with(bytes, FramedSocket::kForever);
}

void TcpCommunicator::broadcast_with(std::vector<uint8_t>& bytes, std::chrono::milliseconds wait) {
  if (rank_ != 0) {
    bytes = link(0).receive(FrameTag::kCommand, wait, timeout_);  // once begun, a command arrives in time
    return;
  }
  for (int r = 1; r < size_; ++r) link(r).send(FrameTag::kCommand, bytes, timeout_);
}

}  // namespace drift
