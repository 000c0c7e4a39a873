#include "server/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <fstream>

namespace drift::server {
namespace {

// fs.nr_open: setrlimit refuses a soft limit above it even when the hard limit is "unlimited".
rlim_t kernel_fd_max() {
  std::ifstream in("/proc/sys/fs/nr_open");
  rlim_t n = 0;
  return in >> n ? n : RLIM_INFINITY;
}

}  // namespace

FdLimit raise_fd_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  FdLimit result{limit.rlim_cur, limit.rlim_cur};
  const rlim_t target = std::min(limit.rlim_max, kernel_fd_max());
  if (target > limit.rlim_cur) {
    limit.rlim_cur = target;
    if (::setrlimit(RLIMIT_NOFILE, &limit) == 0) result.now = target;
  }
  return result;
}

size_t gate_connection_limit(size_t fd_limit, size_t threads, size_t reserve, size_t cap) {
  const size_t taken = threads + reserve;
  return std::clamp<size_t>(fd_limit > taken ? fd_limit - taken : 0, 16, cap);
}

}  // namespace drift::server
