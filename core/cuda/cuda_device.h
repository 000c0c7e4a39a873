#pragma once
// Finding the GPU the CUDA backend runs on, before anything touches the CUDA runtime: without a
// device the first CUDA call would fail with an error about that call (cudaEventCreateWithFlags
// in a member's constructor), not about the missing GPU.

namespace drift::cuda_backend {

// The device the backend uses (device 0). DriftError "no CUDA device was found (...)" with the
// CUDA runtime's own reason when cudaGetDeviceCount fails or counts none.
int require_cuda_device();

}  // namespace drift::cuda_backend
