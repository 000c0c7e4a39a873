#pragma once
// Rank 0's side of starting a tensor-parallel engine (docs/tensor_parallel.md): listen at the
// rendezvous address, start the ranks this machine runs, wait until every rank has joined, send
// each what to load, and after loading its own shard wait until every rank is ready.
#include <chrono>
#include <memory>
#include <string>

#include "core/parallel/local_ranks.h"
#include "core/parallel/step_plan.h"
#include "core/parallel/tcp_communicator.h"

namespace drift {

struct TensorParallelOptions {
  int size = 1;
  std::string rendezvous = "127.0.0.1:0";           // rank 0 listens here (port 0: any free port)
  int local_ranks = 0;                              // ranks 0 .. local_ranks - 1 run on this machine (0: all)
  std::string rank_executable;                      // what the local ranks run (a drift binary)
  std::chrono::milliseconds timeout{60000};         // a collective's wait for a rank
  std::chrono::milliseconds start_timeout{600000};  // joining and loading
};

struct TensorParallelGroup {
  std::unique_ptr<LocalRanks> ranks;  // the processes this machine started
  std::unique_ptr<TcpCommunicator> communicator;
};

// Starts and joins every rank and sends each `setup`. Throws DriftError naming a rank that
// exited, did not join in time or refused its setup.
TensorParallelGroup start_tensor_parallel_group(const TensorParallelOptions& options, const RankSetup& setup);
// Waits until every rank has loaded its shard (or throws naming the rank and its error), and checks
// each loaded the checkpoint rank 0 did (core/parallel/checkpoint_fingerprint.h).
void wait_until_ranks_ready(TensorParallelGroup& group, const std::string& model_path,
                            std::chrono::milliseconds timeout);

}  // namespace drift
