#include "core/parallel/local_ranks.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"

namespace drift {

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "stopped";
}

LocalRanks::~LocalRanks() { reap(5000); }

void LocalRanks::start(const std::string& executable, const std::string& rendezvous, int first, int last, int size) {
  if (access(executable.c_str(), X_OK) != 0)
    fail("tensor parallel: cannot start the local ranks: {} is not an executable ({})", executable,
         std::strerror(errno));
  executable_ = executable;
  for (int rank = first; rank < last; ++rank) {
    // Everything the child needs is built before fork: between fork and exec it may only make
    // async-signal-safe calls.
    std::vector<std::string> args = {executable,           "rank",   "--rendezvous",      rendezvous, "--rank",
                                     std::to_string(rank), "--size", std::to_string(size)};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) fail("tensor parallel: cannot start rank {}: fork failed: {}", rank, std::strerror(errno));
    if (pid == 0) {
      // The rank takes no blocked signals from rank 0's thread (drift serve blocks SIGINT and
      // SIGTERM for its signal thread), so it can be stopped as any process.
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      // The rank dies with rank 0, however rank 0 ends (a crash included). The signal follows the
      // thread that forks: the engine is built on a thread that lives as long as it (drift's main
      // thread); a rank whose rank 0 goes away otherwise still ends at its link's closing.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // rank 0 already gone
      execv(argv[0], argv.data());
      _exit(127);
    }
    children_.push_back({rank, pid, false});
  }
}

void LocalRanks::check_alive() {
  for (Child& child : children_) {
    if (child.exited) continue;
    int status = 0;
    if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
      child.exited = true;
      fail("tensor parallel rank {} (process {}, {}) {} before joining the engine{}", child.rank, child.pid,
           executable_, describe_exit(status),
           WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (its executable could not be run)" : "");
    }
  }
}

void LocalRanks::reap(int grace_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (Child& child : children_) {
    while (!child.exited) {
      int status = 0;
      const pid_t got = waitpid(child.pid, &status, WNOHANG);
      if (got == child.pid || (got < 0 && errno == ECHILD)) {
        child.exited = true;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(child.pid, SIGKILL);
        waitpid(child.pid, &status, 0);
        child.exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

pid_t LocalRanks::pid_of(int rank) const {
  for (const Child& child : children_)
    if (child.rank == rank) return child.pid;
  return 0;
}

}  // namespace drift
