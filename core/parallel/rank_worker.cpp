#include "core/parallel/rank_worker.h"

#include <spdlog/spdlog.h>

#include "core/backend.h"
#include "core/config.h"
#include "core/error.h"
#include "core/model/model_runner.h"
#include "core/model/model_weights.h"
#include "core/parallel/byte_stream.h"
#include "core/parallel/checkpoint_fingerprint.h"
#include "core/parallel/rendezvous.h"
#include "core/parallel/step_plan.h"
#include "core/parallel/tcp_communicator.h"
#include "kernels/cpu/parallel.h"

namespace drift {
namespace {

// How long a rank waits for rank 0 to accept it and send its setup.
constexpr std::chrono::minutes kJoinTimeout{10};

struct LoadedRank {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ModelRunner> runner;
};

LoadedRank load_rank(const RankSetup& setup, int rank, int size, Communicator& communicator) {
  EngineConfig config;
  config.engine.backend = setup.backend;
  config.engine.dtype = setup.dtype;
  const int64_t threads = rank < setup.local_ranks ? setup.num_threads : setup.remote_num_threads;
  if (threads > 0) cpu::set_num_threads(static_cast<int>(threads));
  LoadedRank loaded;
  loaded.backend = create_backend(config);
  const ModelConfig model = load_model_config(setup.model_path);
  const ShardPlan plan = ShardPlan::for_rank(model, rank, size);
  ModelWeights weights = load_model_weights(setup.model_path, model, plan, *loaded.backend);
  loaded.runner = std::make_unique<ModelRunner>(model, std::move(weights), *loaded.backend, setup.num_pages,
                                                setup.block_size, setup.window_pages, RunnerShard{plan, &communicator});
  return loaded;
}

// Runs one command; false once rank 0 closes the engine.
bool run_step(ModelRunner& runner, const StepPlanItem& item) {
  switch (item.command) {
    case StepCommand::kForward:
      runner.forward(item.batch);
      return true;
    case StepCommand::kCopyPage:
      runner.copy_page(item.src_page, item.dst_page);
      return true;
    case StepCommand::kMoveSlots:
      runner.move_slots(item.src_slots, item.dst_slots);
      return true;
    case StepCommand::kCopyWindowPage:
      runner.copy_window_page(item.src_page, item.dst_page);
      return true;
    case StepCommand::kMoveWindowSlots:
      runner.move_window_slots(item.src_slots, item.dst_slots);
      return true;
    case StepCommand::kShutdown:
      return false;
  }
  return false;
}

}  // namespace

int run_tensor_parallel_rank(const std::string& rendezvous, int rank, int size) {
  if (size < 2 || rank < 1 || rank >= size) {
    spdlog::error(
        "drift rank: --rank {} of --size {}: ranks 1 to size - 1 run with `drift rank` (rank 0 is the engine)", rank,
        size);
    return 1;
  }
  FramedSocket link;
  try {
    link = join_rendezvous(parse_rendezvous_address(rendezvous, "--rendezvous"), rank, size, kJoinTimeout);
    // Rank 0 sends the setup once every rank has joined, which may take as long as its
    // start_timeout_s: wait however long (keepalive notices a rank 0 that is gone).
    const RankSetup setup = decode_setup(link.receive(FrameTag::kSetup, FramedSocket::kForever, kJoinTimeout));
    spdlog::set_level(static_cast<spdlog::level::level_enum>(setup.log_level));
    std::vector<FramedSocket> links;
    links.push_back(std::move(link));
    TcpCommunicator communicator(rank, size, std::move(links), std::chrono::milliseconds(setup.timeout_ms));
    try {
      LoadedRank loaded = load_rank(setup, rank, size, communicator);
      ByteWriter ready;
      ready.put(checkpoint_fingerprint(setup.model_path));
      communicator.link(0).send(FrameTag::kReady, ready.bytes(), communicator.timeout());
      spdlog::debug("tensor parallel rank {}: ready", rank);
      std::vector<uint8_t> bytes;
      do communicator.broadcast_wait_forever(bytes);
      while (run_step(*loaded.runner, decode_step(bytes)));
      return 0;
    } catch (const std::exception& e) {
      spdlog::error("tensor parallel rank {}: {}", rank, e.what());
      communicator.link(0).send_error(e.what());
      return 1;
    }
  } catch (const std::exception& e) {
    spdlog::error("tensor parallel rank {}: {}", rank, e.what());
    link.send_error(e.what());
    return 1;
  }
}

}  // namespace drift
