#include "core/parallel/tensor_parallel_group.h"

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/parallel/rendezvous.h"

namespace drift {

TensorParallelGroup start_tensor_parallel_group(const TensorParallelOptions& options, const RankSetup& setup) {
  const RendezvousAddress address = parse_rendezvous_address(options.rendezvous, "tensor_parallel.rendezvous");
  RendezvousListener listener(address);
  RendezvousAddress reachable = address;
  reachable.port = listener.port();
  TensorParallelGroup group;
  group.ranks = std::make_unique<LocalRanks>();
  const int local = options.local_ranks > 0 ? options.local_ranks : options.size;
  group.ranks->start(options.rank_executable, reachable.text(), 1, local, options.size);
  spdlog::info("tensor parallel: {} ranks meet at {} ({} started here{})", options.size, reachable.text(), local,
               local < options.size ? fmt::format("; start ranks {} to {} with `drift rank --rendezvous {} --rank R "
                                                  "--size {}`",
                                                  local, options.size - 1, reachable.text(), options.size)
                                    : "");
  std::vector<FramedSocket> links =
      listener.accept_ranks(options.size, options.start_timeout, [&] { group.ranks->check_alive(); });
  const std::vector<uint8_t> setup_bytes = encode_setup(setup);
  for (int r = 1; r < options.size; ++r) links[r].send(FrameTag::kSetup, setup_bytes, options.timeout);
  group.communicator = std::make_unique<TcpCommunicator>(0, options.size, std::move(links), options.timeout);
  return group;
}

void wait_until_ranks_ready(TensorParallelGroup& group, std::chrono::milliseconds timeout) {
  for (int r = 1; r < group.communicator->size(); ++r) group.communicator->link(r).receive(FrameTag::kReady, timeout);
  spdlog::info("tensor parallel: all {} ranks loaded their shards", group.communicator->size());
}

}  // namespace drift
