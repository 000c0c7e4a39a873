#pragma once
// LocalRanks: the tensor-parallel ranks rank 0 starts on its own machine, one process each
// (`drift rank --rendezvous HOST:PORT --rank R --size N`). They die with rank 0 (a parent-death
// signal), and rank 0 reaps them when the engine closes, killing any that do not exit in time.
#include <sys/types.h>
#include <string>
#include <vector>

namespace drift {

class LocalRanks {
 public:
  LocalRanks() = default;
  LocalRanks(const LocalRanks&) = delete;
  LocalRanks& operator=(const LocalRanks&) = delete;
  ~LocalRanks();

  // Starts ranks first .. last - 1 running `executable`. Throws DriftError naming the executable
  // when it cannot be started.
  void start(const std::string& executable, const std::string& rendezvous, int first, int last, int size);
  // Throws DriftError naming the first started rank that has exited, and how.
  void check_alive();
  // Waits up to `grace_ms` for every rank to exit, then kills the rest.
  void reap(int grace_ms);
  // The process id of rank r (0 when this process did not start it).
  pid_t pid_of(int rank) const;

 private:
  struct Child {
    int rank;
    pid_t pid;
    bool exited;
  };
  std::vector<Child> children_;
  std::string executable_;
};

// "exited with status 3" / "was killed by signal 9 (Killed)", from a waitpid status.
std::string describe_exit(int status);

}  // namespace drift
