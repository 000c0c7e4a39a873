#include "core/cuda/pinned_staging.h"

#include <cstring>

#include "core/cuda/cuda_check.h"

namespace drift::cuda_backend {

// The buffer comes with the first upload: the backend owning this is made before its device is
// chosen (and on a machine without one, never used).
PinnedStaging::PinnedStaging(size_t capacity) : capacity_(capacity) {}

PinnedStaging::~PinnedStaging() {
  if (copied_) cudaEventDestroy(copied_);
  if (pinned_) cudaFreeHost(pinned_);
}

void PinnedStaging::upload(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  if (bytes > capacity_) {  // too large to stage: a plain copy, waited for
    DRIFT_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
    DRIFT_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  if (!pinned_) {
    DRIFT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&pinned_), capacity_));
    DRIFT_CUDA(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
  }
  if (offset_ + bytes > capacity_) recycle();
  std::memcpy(pinned_ + offset_, host, bytes);
  DRIFT_CUDA(cudaMemcpyAsync(device, pinned_ + offset_, bytes, cudaMemcpyHostToDevice, stream));
  DRIFT_CUDA(cudaEventRecord(copied_, stream));
  offset_ += (bytes + 255) / 256 * 256;
}

void PinnedStaging::recycle() {
  if (offset_ == 0) return;
  DRIFT_CUDA(cudaEventSynchronize(copied_));
  offset_ = 0;
}

}  // namespace drift::cuda_backend
