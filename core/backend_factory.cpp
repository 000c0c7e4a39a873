// create_backend: the backends compiled into this build.
#include <filesystem>

#include "core/backend.h"
#include "core/config.h"
#include "core/cpu_backend.h"
#include "core/safetensors.h"
#include "core/error.h"
#ifdef DRIFT_WITH_CUDA
#include "core/cuda/cuda_backend.h"
#endif

namespace drift {

std::unique_ptr<Backend> create_backend(const std::string& name) {
  return create_backend(name, name == "cpu" ? DType::F32 : DType::BF16);
}

std::unique_ptr<Backend> create_backend(const std::string& name, DType storage) {
  if (name == "cpu") {
    if (storage != DType::F32) fail("backend cpu computes in float32, not {}", dtype_name(storage));
    return std::make_unique<CpuBackend>();
  }
  if (name == "cuda") {
#ifdef DRIFT_WITH_CUDA
    return std::make_unique<CudaBackend>(storage);
#else
    fail("backend 'cuda' is not available in this build (built without nvcc); use backend = \"cpu\"");
#endif
  }
  fail("unknown backend '{}' (expected cpu or cuda)", name);
}

namespace {

// engine.dtype "auto" on a 16-bit backend: the checkpoint's own half type, read from its embedding.
DType checkpoint_half_type(const std::string& dir) {
  if (dir.empty() || !std::filesystem::is_directory(dir)) return DType::BF16;
  SafetensorsCheckpoint checkpoint(dir);
  const std::string name = "model.embed_tokens.weight";
  return checkpoint.contains(name) && checkpoint.get(name).dtype == DType::F16 ? DType::F16 : DType::BF16;
}

}  // namespace

std::unique_ptr<Backend> create_backend(const EngineConfig& config) {
  const std::string& name = config.engine.backend;
  const std::string& dtype = config.engine.dtype;
  const std::string& source = config.source.empty() ? std::string("config") : config.source;
  if (name == "cpu") {
    if (dtype != "auto" && dtype != "float32")
      fail("{}: engine.dtype = \"{}\": backend cpu computes in float32 (use \"auto\" or \"float32\")", source, dtype);
    return create_backend(name, DType::F32);
  }
  if (dtype == "float32")
    fail("{}: engine.dtype = \"float32\": backend {} stores bfloat16 or float16", source, name);
  const DType storage = dtype == "float16" ? DType::F16 : dtype == "bfloat16" ? DType::BF16
                                                                            : checkpoint_half_type(config.model.path);
  return create_backend(name, storage);
}

bool cuda_backend_compiled() {
#ifdef DRIFT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace drift
