// `drift rank`: one tensor-parallel rank other than 0 (docs/tensor_parallel.md). The engine (rank
// 0) starts the ranks of its own machine itself; on other machines start ranks with the
// rendezvous address rank 0 logs: `drift rank --rendezvous HOST:PORT --rank R --size N`.
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "core/parallel/rank_worker.h"

namespace drift::app {
namespace {

namespace po = boost::program_options;

int run_rank(const std::vector<std::string>& args) {
  std::string rendezvous;
  int rank = -1, size = 0;
  po::options_description desc("usage: drift rank --rendezvous HOST:PORT --rank R --size N\n\noptions");
  desc.add_options()("help,h", "show this help")("rendezvous", po::value(&rendezvous)->required(),
                                                 "rank 0's rendezvous address (it logs it at startup)")(
      "rank", po::value(&rank)->required(), "this rank, 1 to N - 1")("size", po::value(&size)->required(),
                                                                     "the engine's tensor_parallel_size N");
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm, "drift rank: one tensor-parallel rank joining rank 0's engine")) return 0;
  return run_tensor_parallel_rank(rendezvous, rank, size);
}

}  // namespace

DRIFT_REGISTER_COMMAND(rank, "rank", "one tensor-parallel rank joining an engine's rendezvous (started by the engine)",
                       run_rank);

}  // namespace drift::app
