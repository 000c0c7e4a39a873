#pragma once
// A tensor-parallel rank other than 0 (`drift rank`, docs/tensor_parallel.md): joins rank 0's
// rendezvous, loads its shard as rank 0's setup says, then runs each command of the step plan
// until rank 0 says the engine is closing. Any error is sent to rank 0 (which ends the engine
// naming this rank) and ends this process.
#include <string>

namespace drift {

// Returns the process's exit status: 0 after rank 0's shutdown, 1 after an error (logged).
int run_tensor_parallel_rank(const std::string& rendezvous, int rank, int size);

}  // namespace drift
