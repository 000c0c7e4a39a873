// create_backend: the backends compiled into this build.
#include "core/backend.h"
#include "core/cpu_backend.h"
#include "core/error.h"
#ifdef DRIFT_WITH_CUDA
#include "core/cuda/cuda_backend.h"
#endif

namespace drift {

std::unique_ptr<Backend> create_backend(const std::string& name) {
  if (name == "cpu") return std::make_unique<CpuBackend>();
  if (name == "cuda") {
#ifdef DRIFT_WITH_CUDA
    return std::make_unique<CudaBackend>();
#else
    fail("backend 'cuda' is not available in this build (built without nvcc); use backend = \"cpu\"");
#endif
  }
  fail("unknown backend '{}' (expected cpu or cuda)", name);
}

bool cuda_backend_compiled() {
#ifdef DRIFT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace drift
