#include "support/cuda_device.h"

#include "core/error.h"

namespace drift::test {

std::unique_ptr<Backend> cuda_backend_or_null(std::string& why, DType storage) {
  if (!cuda_backend_compiled()) {
    why = "GPU test skipped: this build has no CUDA backend (nvcc was not found at configure time)";
    return nullptr;
  }
  try {
    return create_backend("cuda", storage);
  } catch (const DriftError& e) {
    why = std::string("GPU test skipped: ") + e.what();
    return nullptr;
  }
}

}  // namespace drift::test
