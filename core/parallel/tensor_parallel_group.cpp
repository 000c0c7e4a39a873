#include "core/parallel/tensor_parallel_group.h"

#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/parallel/byte_stream.h"
#include "core/parallel/checkpoint_fingerprint.h"
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
  const bool loopback = address.host == "localhost" || address.host == "::1" || address.host.starts_with("127.");
  if (local < options.size && loopback)
    spdlog::warn(
        "tensor parallel: ranks {} to {} are to be started by hand, but the rendezvous {} is reachable from this "
        "machine only: ranks on other machines need an address they reach",
        local, options.size - 1, address.text());
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

void wait_until_ranks_ready(TensorParallelGroup& group, const std::string& model_path,
                            std::chrono::milliseconds timeout) {
  const uint64_t mine = checkpoint_fingerprint(model_path);
  for (int r = 1; r < group.communicator->size(); ++r) {
    const std::vector<uint8_t> ready = group.communicator->link(r).receive(FrameTag::kReady, timeout);
    ByteReader reader(ready);
    if (reader.get<uint64_t>() != mine)
      fail(
          "tensor parallel rank {} loaded a different checkpoint at {}: its config.json or tensors differ from rank "
          "0's (every machine needs the same checkpoint at that path)",
          r, model_path);
  }
  spdlog::info("tensor parallel: all {} ranks loaded their shards", group.communicator->size());
}

}  // namespace drift
