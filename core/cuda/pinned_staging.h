#pragma once
// PinnedStaging: small host-to-device uploads outside a forward's own upload (the ids, positions
// and attention metadata of plugin service calls) go through one pinned buffer, so they are
// truly asynchronous: the host queues the copy and moves on instead of waiting for the stream to
// drain -- a draft model's forward makes several such calls, and a wait in each serialized the
// host's work with the GPU's. Space is reused once the copies that read it have run.
#include <cstddef>

#include <cuda_runtime.h>

namespace drift::cuda_backend {

class PinnedStaging {
 public:
  explicit PinnedStaging(size_t capacity = size_t{4} << 20);
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Queues device[0, bytes) = host[0, bytes) on `stream`; `host` may be released on return.
  void upload(void* device, const void* host, size_t bytes, cudaStream_t stream);
  // Makes the whole buffer reusable (waits for the last queued copy, usually long done).
  void recycle();

 private:
  char* pinned_ = nullptr;
  size_t capacity_ = 0;
  size_t offset_ = 0;
  cudaEvent_t copied_ = nullptr;  // after the last queued copy
};

}  // namespace drift::cuda_backend
