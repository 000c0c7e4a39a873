#pragma once
// The process's open-file limit. Every connection, idle ones in the ConnectionGate included,
// holds a descriptor, and the usual soft limit (1024) is far below what a server parks; the
// hard limit is what the administrator allows, so the server raises its soft limit to it.
#include <cstddef>

namespace drift::server {

struct FdLimit {
  size_t before = 0;  // the soft limit found
  size_t now = 0;     // the soft limit after raising it
};

// Raises RLIMIT_NOFILE's soft limit to its hard limit (capped at what the kernel allows).
FdLimit raise_fd_limit();

// Connections the gate may hold under `fd_limit` descriptors, leaving room for `threads` busy
// connections and `reserve` other files (model, plugins, epoll, logs); at most `cap`.
size_t gate_connection_limit(size_t fd_limit, size_t threads, size_t reserve = 256, size_t cap = 16384);

}  // namespace drift::server
