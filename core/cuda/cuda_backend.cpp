#include "core/cuda/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/tensor_kind.h"
#include "core/error.h"
#include "kernels/cuda/ops.h"

namespace drift {
namespace {

using cuda::ElemType;
using cuda_backend::elem_type;
using cuda_backend::expect_device;
using cuda_backend::expect_dtype;

constexpr int64_t kAttentionWorkspaceBytes = int64_t{256} << 20;

[[noreturn]] ElemType fail_type(DType dtype) {
  fail("CUDA backend: cannot load {} checkpoint tensors (float32, bfloat16 and float16 only)", dtype_name(dtype));
}

}  // namespace

CudaBackend::CudaBackend(DType storage) : storage_(storage) {
  if (storage != DType::BF16 && storage != DType::F16)
    fail("backend 'cuda' stores bfloat16 or float16, not {}", dtype_name(storage));
  storage_type_ = storage == DType::F16 ? ElemType::F16 : ElemType::BF16;
  DRIFT_CUDA(cudaSetDevice(device_));
  DRIFT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  gemm_ = std::make_unique<cuda_backend::BlasGemm>();
  attention_workspace_bytes_ = kAttentionWorkspaceBytes;
  DRIFT_CUDA(cudaMalloc(&attention_workspace_, attention_workspace_bytes_));
  // DRIFT_CUDA_GRAPHS=0 runs every forward eagerly (measuring the graphs' gain, debugging).
  if (const char* env = std::getenv("DRIFT_CUDA_GRAPHS"); env && std::string(env) == "0") graphs_enabled_ = false;
  // DRIFT_CUDA_PAIRED_WEIGHTS=0 loads every weight stacked, so the fused projections run as the
  // separate GEMM and pointwise kernels (measuring the fusion's gain).
  if (const char* env = std::getenv("DRIFT_CUDA_PAIRED_WEIGHTS"); env && std::string(env) == "0")
    paired_weights_ = false;
  // DRIFT_CUDA_SCALED_OUTPUT_MB sets the scaled projections' chunk of fp32 output (measuring
  // chunk sizes; cuda_backend_residual.cpp).
  if (const char* env = std::getenv("DRIFT_CUDA_SCALED_OUTPUT_MB"); env && std::atoll(env) > 0)
    scaled_output_cap_floats_ = std::atoll(env) * (int64_t{1} << 20) / int64_t{sizeof(float)};
  cudaDeviceProp prop{};
  DRIFT_CUDA(cudaGetDeviceProperties(&prop, device_));
  spdlog::info("CUDA backend: {} ({} SMs, {:.1f} GiB), {} storage", prop.name, prop.multiProcessorCount,
               prop.totalGlobalMem / 1073741824.0, dtype_name(storage_));
}

CudaBackend::~CudaBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  clear_graphs();
  cudaFree(attention_workspace_);
  if (stream_) cudaStreamDestroy(stream_);
}

void CudaBackend::synchronize() { DRIFT_CUDA(cudaStreamSynchronize(stream_)); }

Tensor CudaBackend::alloc(std::vector<int64_t> shape, DType dtype) {
  size_t bytes = dtype_size(dtype);
  for (int64_t d : shape) {
    DRIFT_CHECK(d >= 0, "negative dimension in a CUDA allocation");
    bytes *= static_cast<size_t>(d);
  }
  void* data = nullptr;
  const cudaError_t status = cudaMalloc(&data, std::max<size_t>(bytes, 1));
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of a failed allocation
    throw std::bad_alloc();
  }
  DRIFT_CUDA(cudaMemsetAsync(data, 0, bytes, stream_));
  return Tensor::wrap(data, std::move(shape), dtype, Device::CUDA, std::shared_ptr<void>(data, cudaFree));
}

Tensor CudaBackend::scratch(std::vector<int64_t> shape, DType dtype) {
  size_t bytes = dtype_size(dtype);
  for (int64_t d : shape) bytes *= static_cast<size_t>(d);
  return Tensor::wrap(arena_.allocate(bytes), std::move(shape), dtype, Device::CUDA, nullptr);
}

void CudaBackend::begin_forward(const ForwardInputs& inputs) {
  if (capturing_) {  // a recorded forward failed half way (it threw): drop the recording
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    capturing_ = false;
  }
  arena_.reset();
  scaled_output_ = nullptr;  // it was arena memory
  scaled_output_floats_ = 0;
  staging_.recycle();
  upload_.upload(inputs, stream_);
  const uint64_t generation = arena_.generation() * 1000003u + upload_.generation();
  if (generation != graph_generation_) {
    clear_graphs();
    graph_generation_ = generation;
  }
}

void CudaBackend::clear_graphs() {
  for (auto& [key, g] : graphs_) cudaGraphExecDestroy(g.exec);
  graphs_.clear();
  seen_shapes_.clear();
}

std::optional<Tensor> CudaBackend::replay_forward() {
  if (!graphs_enabled_) return std::nullopt;
  auto it = graphs_.find(upload_.shape_key());
  if (it == graphs_.end()) return std::nullopt;
  DRIFT_CUDA(cudaGraphLaunch(it->second.exec, stream_));
  arena_.move_to(it->second.arena_end);
  replayed_extras_ = it->second.extras;
  return it->second.output;
}

// The first forward of a shape runs eagerly (it sizes the arena and makes cuBLASLt plans); the
// second is recorded.
bool CudaBackend::begin_forward_capture() {
  if (!graphs_enabled_ || seen_shapes_.insert(upload_.shape_key()).second) return false;
  DRIFT_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
  return true;
}

void CudaBackend::end_forward_capture(const Tensor& output, std::vector<Tensor> extras) {
  capturing_ = false;
  cudaGraph_t graph = nullptr;
  DRIFT_CUDA(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  DRIFT_CUDA(status);
  graphs_[upload_.shape_key()] = ForwardGraph{exec, output, std::move(extras), arena_.position()};
  DRIFT_CUDA(cudaGraphLaunch(exec, stream_));  // recording ran nothing: run it now
}

void CudaBackend::end_forward() { upload_.forget_inputs(); }

// Host fp32 goes up as is and is rounded on the device (round to nearest even, as the kernels).
Tensor CudaBackend::upload(const Tensor& host_f32) {
  expect_dtype(host_f32, DType::F32, "an uploaded tensor");
  DRIFT_CHECK(host_f32.device() == Device::CPU, "CUDA backend: upload takes a host tensor");
  RawTensor raw{host_f32.data(), DType::F32, host_f32.shape()};
  return load_weight(std::span<const RawTensor>(&raw, 1));
}

// Checkpoint tensors go up in their own dtype, straight from the mapped file, and are converted
// on the device into the storage dtype (a copy when they already are in it): loading needs no
// fp32 copy of the model in host memory.
Tensor CudaBackend::load_weight(std::span<const RawTensor> row_blocks, int64_t pair_span) {
  std::vector<int64_t> shape = row_blocks[0].shape;
  shape[0] = 0;
  for (const RawTensor& part : row_blocks) shape[0] += part.shape[0];
  Tensor out = alloc(shape, storage_);
  char* dst = static_cast<char*>(out.data());
  void* staging = nullptr;
  for (const RawTensor& part : row_blocks) {
    int64_t n = 1;
    for (int64_t d : part.shape) n *= d;
    const size_t bytes = static_cast<size_t>(n) * dtype_size(part.dtype);
    if (part.dtype == storage_) {
      DRIFT_CUDA(cudaMemcpyAsync(dst, part.data, bytes, cudaMemcpyHostToDevice, stream_));
    } else {
      const ElemType from = part.dtype == DType::F32 ? ElemType::F32
                            : part.dtype == DType::BF16 ? ElemType::BF16
                            : part.dtype == DType::F16 ? ElemType::F16
                                                       : fail_type(part.dtype);
      DRIFT_CUDA(cudaMallocAsync(&staging, std::max<size_t>(bytes, 1), stream_));
      DRIFT_CUDA(cudaMemcpyAsync(staging, part.data, bytes, cudaMemcpyHostToDevice, stream_));
      cuda::convert(staging, from, dst, storage_type_, n, stream_);
      DRIFT_LAUNCHED("convert");
      DRIFT_CUDA(cudaFreeAsync(staging, stream_));
    }
    dst += static_cast<size_t>(n) * dtype_size(storage_);
  }
  Tensor stacked;  // the source of pair_rows' queued copies: released only after the wait below
  if (pairs_rows(shape[0], pair_span)) {
    stacked = std::exchange(out, alloc(shape, storage_));
    DRIFT_CUDA(cuda::pair_rows(stacked.data(), out.data(), shape[0], stacked.numel() / shape[0] * dtype_size(storage_),
                               pair_span, stream_));
  }
  synchronize();  // the sources are host memory the caller may release
  return out;
}

// Results land in pinned memory reused from call to call (fresh pageable pages would fault in
// on every step); a buffer still held by an earlier result is left to it.
Tensor CudaBackend::host_result(const std::vector<int64_t>& shape) {
  size_t bytes = sizeof(float);
  for (int64_t d : shape) bytes *= static_cast<size_t>(d);
  if (!pinned_ || pinned_.use_count() > 1 || pinned_bytes_ < bytes) {
    void* p = nullptr;
    pinned_bytes_ = std::max(bytes, pinned_bytes_);
    DRIFT_CUDA(cudaMallocHost(&p, std::max<size_t>(pinned_bytes_, 1)));
    pinned_ = std::shared_ptr<void>(p, cudaFreeHost);
  }
  return Tensor::wrap(pinned_.get(), shape, DType::F32, Device::CPU, pinned_);
}

Tensor CudaBackend::to_host_f32(const Tensor& t) {
  expect_device(t, "tensor");
  Tensor host = host_result(t.shape());
  if (t.dtype() == DType::F32) {
    DRIFT_CUDA(cudaMemcpyAsync(host.data(), t.data(), t.nbytes(), cudaMemcpyDeviceToHost, stream_));
  } else {
    Tensor f32 = scratch(t.shape(), DType::F32);
    cuda::convert(t.data(), elem_type(t), f32.data(), ElemType::F32, t.numel(), stream_);
    DRIFT_LAUNCHED("convert");
    DRIFT_CUDA(cudaMemcpyAsync(host.data(), f32.data(), f32.nbytes(), cudaMemcpyDeviceToHost, stream_));
  }
  synchronize();
  return host;
}

const int32_t* CudaBackend::device_ints(const std::vector<int32_t>& host) {
  const ForwardInputs& in = upload_.inputs();
  if (in.tokens && &host == in.tokens) return upload_.tokens();
  if (in.positions && &host == in.positions) return upload_.positions();
  if (in.logit_rows && &host == in.logit_rows) return upload_.logit_rows();
  auto* device = static_cast<int32_t*>(arena_.allocate(host.size() * sizeof(int32_t)));
  staging_.upload(device, host.data(), host.size() * sizeof(int32_t), stream_);  // no wait: pinned
  return device;
}

// Rotary frequency tables, kept for the backend's lifetime (recorded forwards point at them).
const float* CudaBackend::device_floats(const std::vector<float>& host) {
  for (const auto& [values, device] : frequency_tables_)
    if (values == host) return device.get();
  float* device = nullptr;
  DRIFT_CUDA(cudaMalloc(&device, std::max<size_t>(host.size(), 1) * sizeof(float)));
  frequency_tables_.emplace_back(host, std::shared_ptr<float>(device, cudaFree));
  DRIFT_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  return device;
}

const cuda_backend::DeviceAttention& CudaBackend::device_attention(const AttentionMetadata& meta) {
  if (&meta == upload_.inputs().attention) return upload_.attention();
  if (&meta == upload_.inputs().window_attention) return upload_.window_attention();
  adhoc_attention_ = upload_.upload_attention(meta, arena_, staging_, stream_);
  return adhoc_attention_;
}

void CudaBackend::embedding(const Tensor& table, const std::vector<int32_t>& ids, Tensor& out) {
  expect_dtype(table, storage_, "embedding table");
  cuda::embedding(table.data(), device_ints(ids), static_cast<int64_t>(ids.size()), table.dim(1), out.data(),
                  elem_type(out), storage_type_, stream_);
  DRIFT_LAUNCHED("embedding");
}

void CudaBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  expect_dtype(weight, storage_, "rms_norm weight");
  const int64_t dim = weight.numel();
  cuda::rms_norm(x.data(), elem_type(x), weight.data(), eps, x.numel() / dim, dim, out.data(), elem_type(out),
                 storage_type_, stream_);
  DRIFT_LAUNCHED("rms_norm");
}

void CudaBackend::add_rms_norm(Tensor& residual, const Tensor& delta, const Tensor& weight, float eps, Tensor& out) {
  if (residual.dtype() != DType::F32 || delta.dtype() != storage_ || out.dtype() != storage_) {
    Backend::add_rms_norm(residual, delta, weight, eps, out);
    return;
  }
  const int64_t dim = weight.numel();
  cuda::add_rms_norm(residual.as<float>(), delta.data(), weight.data(), eps, residual.numel() / dim, dim, out.data(),
                     storage_type_, stream_);
  DRIFT_LAUNCHED("add_rms_norm");
}

void CudaBackend::linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  expect_dtype(x, storage_, "linear input");
  expect_dtype(weight, storage_, "linear weight");
  const int64_t k = weight.dim(1), n = weight.dim(0), rows = x.numel() / k;
  const void* b = bias.empty() ? nullptr : bias.data();
  if (cuda::skinny_gemm_mma(x.data(), weight.data(), b, out.data(), elem_type(out), rows, n, k, storage_type_,
                            stream_) ||
      cuda::skinny_gemm(x.data(), weight.data(), b, out.data(), elem_type(out), rows, n, k, storage_type_, stream_)) {
    DRIFT_LAUNCHED("skinny_gemm");
    return;
  }
  if (!blas_broken_) {
    try {
      gemm_->run(x.data(), weight.data(), b, out.data(), out.dtype() == DType::F32, rows, n, k, storage_type_,
                 stream_);
      return;
    } catch (const DriftError& e) {
      spdlog::warn("{}; GEMMs of more than {} rows fall back to the skinny kernel, row block by row block (slow)",
                   e.what(), cuda::kSkinnyMaxRows);
      blas_broken_ = true;
    }
  }
  const int64_t out_row = n * static_cast<int64_t>(dtype_size(out.dtype())), in_row = k * 2;
  for (int64_t r = 0; r < rows; r += cuda::kSkinnyMaxRows) {
    const int64_t count = std::min(cuda::kSkinnyMaxRows, rows - r);
    const void* xr = static_cast<const char*>(x.data()) + r * in_row;
    void* yr = static_cast<char*>(out.data()) + r * out_row;
    if (!cuda::skinny_gemm_mma(xr, weight.data(), b, yr, elem_type(out), count, n, k, storage_type_, stream_))
      cuda::skinny_gemm(xr, weight.data(), b, yr, elem_type(out), count, n, k, storage_type_, stream_);
  }
  DRIFT_LAUNCHED("skinny_gemm");
}

void CudaBackend::rope(Tensor& x, const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                       float attention_scale) {
  expect_dtype(x, storage_, "rope input");
  cuda::rope(x.data(), device_ints(positions), device_floats(inv_freq), x.dim(0), x.dim(1), x.dim(2),
             attention_scale, storage_type_, stream_);
  DRIFT_LAUNCHED("rope");
}

void CudaBackend::write_kv(LayerKV& kv, const Tensor& k, const Tensor& v, const AttentionMetadata& meta) {
  const cuda_backend::DeviceAttention& d = device_attention(meta);
  DRIFT_CHECK(static_cast<int64_t>(meta.slots.size()) == k.dim(0), "write_kv: {} slots for {} K/V rows",
              meta.slots.size(), k.dim(0));
  cuda::write_kv(kv.k.data(), kv.v.data(), k.data(), v.data(), d.slots, k.dim(0), kv.k.dim(1) * kv.k.dim(2), stream_);
  DRIFT_LAUNCHED("write_kv");
}

cuda::RopeQkvOutputs CudaBackend::rope_qkv_outputs(Tensor& q, LayerKV& kv, const std::vector<int32_t>& positions,
                                                   const std::vector<float>& inv_freq, float attention_scale,
                                                   const AttentionMetadata& meta) {
  cuda::RopeQkvOutputs out;
  out.q = q.data();
  out.k_cache = kv.k.data();
  out.v_cache = kv.v.data();
  out.positions = device_ints(positions);
  out.slots = device_attention(meta).slots;
  out.inv_freq = device_floats(inv_freq);
  out.heads = q.dim(1);
  out.kv_heads = kv.k.dim(1);
  out.head_dim = q.dim(2);
  out.attention_scale = attention_scale;
  return out;
}

void CudaBackend::qkv_rope_write(const Tensor& qkv, Tensor& q, Tensor& /*k*/, Tensor& /*v*/, LayerKV& kv,
                                 const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                                 float attention_scale, const AttentionMetadata& meta) {
  expect_dtype(qkv, storage_, "qkv");
  const cuda::RopeQkvOutputs out = rope_qkv_outputs(q, kv, positions, inv_freq, attention_scale, meta);
  cuda::rope_qkv_to_cache(qkv.data(), false, out, q.dim(0), storage_type_, stream_);
  DRIFT_LAUNCHED("rope_qkv_to_cache");
}

// The weight was loaded with pair_span = head_dim: paired when that layout applies, and then one
// GEMM with the prologue in its epilogue whenever the skinny tensor-core path takes the shape
// (as linear would), else the GEMM and the prologue reading the paired columns.
void CudaBackend::linear_qkv_rope_write(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& qkv,
                                        Tensor& q, Tensor& /*k*/, Tensor& /*v*/, LayerKV& kv,
                                        const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                                        float attention_scale, const AttentionMetadata& meta) {
  expect_dtype(x, storage_, "linear input");
  expect_dtype(weight, storage_, "linear weight");
  expect_dtype(qkv, storage_, "qkv");
  const cuda::RopeQkvOutputs out = rope_qkv_outputs(q, kv, positions, inv_freq, attention_scale, meta);
  const int64_t k = weight.dim(1), rows = x.numel() / k;
  const bool paired = pairs_rows(weight.dim(0), out.head_dim);
  if (paired && cuda::skinny_gemm_mma_rope_qkv(x.data(), weight.data(), bias.empty() ? nullptr : bias.data(), out, rows,
                                               k, storage_type_, stream_)) {
    DRIFT_LAUNCHED("skinny_gemm_mma_rope_qkv");
    return;
  }
  linear(x, weight, bias, qkv);
  cuda::rope_qkv_to_cache(qkv.data(), paired, out, rows, storage_type_, stream_);
  DRIFT_LAUNCHED("rope_qkv_to_cache");
}

void CudaBackend::attention(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                            int64_t block_size, Tensor& out) {
  attention_variant(q, kv, meta, scale, block_size, AttentionVariant{}, out);
}

void CudaBackend::attention_variant(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                                    int64_t block_size, const AttentionVariant& variant, Tensor& out) {
  if (variant.sinks) {
    expect_dtype(*variant.sinks, storage_, "attention sinks");
    DRIFT_CHECK(variant.sinks->numel() == q.dim(1), "attention sinks: {} values for {} heads", variant.sinks->numel(),
                q.dim(1));
  }
  const cuda_backend::DeviceAttention& d = device_attention(meta);
  cuda::PagedAttentionParams p;
  p.storage = storage_type_;
  p.q = q.data();
  p.k_cache = kv.k.data();
  p.v_cache = kv.v.data();
  p.out = out.data();
  p.tokens = q.dim(0);
  p.num_heads = q.dim(1);
  p.head_dim = q.dim(2);
  p.num_kv_heads = kv.k.dim(1);
  p.block_size = block_size;
  p.scale = scale;
  p.token_seq = d.token_seq;
  p.block_tables = d.block_tables;
  p.table_stride = d.table_stride;
  p.kv_len = d.kv_len;
  p.tables_per_seq = d.tables_per_seq;
  p.tiles = d.tiles;
  p.num_tiles = d.num_tiles;
  p.max_tile_queries = d.max_tile_queries;
  p.max_kv_len = d.max_kv_len;
  p.mask_start = d.mask_start;
  p.mask = d.mask;
  p.mask_words = d.mask_words;
  p.workspace = attention_workspace_;
  p.workspace_bytes = attention_workspace_bytes_;
  p.sinks = variant.sinks ? variant.sinks->data() : nullptr;
  p.window = variant.window;
  if (p.max_kv_len == 0) {  // nothing visible anywhere: zeros, as the CPU reference
    DRIFT_CUDA(cudaMemsetAsync(out.data(), 0, out.nbytes(), stream_));
    return;
  }
  if (!cuda::paged_attention(p, stream_))
    fail("CUDA attention: unsupported shape (head_dim {}, {} heads over {} kv heads, {} visible positions)",
         p.head_dim, p.num_heads, p.num_kv_heads, p.max_kv_len);
  DRIFT_LAUNCHED("paged_attention");
}

void CudaBackend::silu_mul(const Tensor& gate_up, Tensor& out) {
  cuda::silu_mul(gate_up.data(), false, out.data(), gate_up.dim(0), out.dim(1), storage_type_, stream_);
  DRIFT_LAUNCHED("silu_mul");
}

// As linear_qkv_rope_write: gate_up was loaded with pair_span = 2 * intermediate.
void CudaBackend::linear_swiglu(const Tensor& x, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act) {
  expect_dtype(x, storage_, "linear input");
  expect_dtype(gate_up, storage_, "linear weight");
  expect_dtype(act, storage_, "swiglu output");
  expect_dtype(gate_up_out, storage_, "gate/up output");
  const int64_t k = gate_up.dim(1), inter = act.dim(1), rows = x.numel() / k;
  const bool paired = pairs_rows(gate_up.dim(0), gate_up.dim(0));
  if (paired &&
      cuda::skinny_gemm_mma_swiglu(x.data(), gate_up.data(), act.data(), rows, inter, k, storage_type_, stream_)) {
    DRIFT_LAUNCHED("skinny_gemm_mma_swiglu");
    return;
  }
  linear(x, gate_up, Tensor(), gate_up_out);
  cuda::silu_mul(gate_up_out.data(), paired, act.data(), rows, inter, storage_type_, stream_);
  DRIFT_LAUNCHED("silu_mul");
}

void CudaBackend::add_inplace(Tensor& x, const Tensor& y) {
  cuda::add_inplace(x.data(), elem_type(x), y.data(), elem_type(y), x.numel(), stream_);
  DRIFT_LAUNCHED("add_inplace");
}

void CudaBackend::split_columns(const Tensor& x, const std::vector<Tensor*>& outs) {
  const int64_t rows = x.dim(0), elem = static_cast<int64_t>(dtype_size(x.dtype()));
  int64_t offset = 0;
  for (Tensor* out : outs) {
    const int64_t width = out->numel() / rows;
    cuda::copy_columns(x.data(), x.dim(1) * elem, offset * elem, out->data(), width * elem, rows, stream_);
    offset += width;
  }
  DRIFT_CHECK(offset == x.dim(1), "split widths {} != columns {}", offset, x.dim(1));
  DRIFT_LAUNCHED("copy_columns");
}

// cudaMemcpy2DAsync places each part's rows at its column offset: a strided copy, no kernel.
void CudaBackend::join_columns(const std::vector<const Tensor*>& parts, Tensor& out) {
  const int64_t rows = out.dim(0), elem = static_cast<int64_t>(dtype_size(out.dtype()));
  const int64_t row_bytes = rows > 0 ? out.nbytes() / rows : 0;
  int64_t offset = 0;
  for (const Tensor* part : parts) {
    const int64_t width = rows > 0 ? part->nbytes() / rows : 0;
    if (width > 0)
      DRIFT_CUDA(cudaMemcpy2DAsync(static_cast<char*>(out.data()) + offset, row_bytes, part->data(), width, width, rows,
                                   cudaMemcpyDeviceToDevice, stream_));
    offset += width;
  }
  DRIFT_CHECK(rows == 0 || offset == row_bytes, "joined widths {} != columns {} of {}", offset / elem, row_bytes / elem,
              out.shape_string());
}

void CudaBackend::gather_rows(const Tensor& x, const std::vector<int32_t>& rows, Tensor& out) {
  const int64_t row_bytes = x.dim(1) * static_cast<int64_t>(dtype_size(x.dtype()));
  cuda::gather_rows(x.data(), device_ints(rows), static_cast<int64_t>(rows.size()), row_bytes, out.data(), stream_);
  DRIFT_LAUNCHED("gather_rows");
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  DRIFT_CHECK(src.nbytes() == dst.nbytes(), "copy of {} into {}", src.shape_string(), dst.shape_string());
  const cudaMemcpyKind kind = src.device() == Device::CPU
                                  ? (dst.device() == Device::CPU ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                                  : (dst.device() == Device::CPU ? cudaMemcpyDeviceToHost : cudaMemcpyDeviceToDevice);
  DRIFT_CUDA(cudaMemcpyAsync(dst.data(), src.data(), src.nbytes(), kind, stream_));
  if (kind != cudaMemcpyDeviceToDevice) synchronize();
}

void CudaBackend::copy_page(std::vector<LayerKV>& layers, int32_t src, int32_t dst, int64_t block_size) {
  for (auto& layer : layers) {
    const int64_t page_bytes = block_size * layer.k.dim(1) * layer.k.dim(2) * 2;
    cuda::copy_page(layer.k.data(), page_bytes, src, dst, stream_);
    cuda::copy_page(layer.v.data(), page_bytes, src, dst, stream_);
  }
  DRIFT_LAUNCHED("copy_page");
}

void CudaBackend::copy_slots(std::vector<LayerKV>& layers, std::span<const int64_t> src,
                             std::span<const int64_t> dst) {
  if (src.empty()) return;
  const size_t bytes = src.size() * sizeof(int64_t);
  auto* device = static_cast<int64_t*>(arena_.allocate(2 * bytes));
  DRIFT_CUDA(cudaMemcpyAsync(device, src.data(), bytes, cudaMemcpyHostToDevice, stream_));
  DRIFT_CUDA(cudaMemcpyAsync(device + src.size(), dst.data(), bytes, cudaMemcpyHostToDevice, stream_));
  for (auto& layer : layers) {
    const int64_t slot_bytes = layer.k.dim(1) * layer.k.dim(2) * 2;
    cuda::copy_slots(layer.k.data(), slot_bytes, device, device + src.size(), static_cast<int64_t>(src.size()),
                     stream_);
    cuda::copy_slots(layer.v.data(), slot_bytes, device, device + src.size(), static_cast<int64_t>(src.size()),
                     stream_);
  }
  DRIFT_LAUNCHED("copy_slots");
  synchronize();  // src/dst are pageable host memory
}

std::vector<int32_t> CudaBackend::argmax(const Tensor& logits) {
  expect_dtype(logits, DType::F32, "argmax logits");
  const int64_t rows = logits.dim(0);
  auto* device = static_cast<int32_t*>(arena_.allocate(std::max<int64_t>(rows, 1) * sizeof(int32_t)));
  cuda::argmax_rows(logits.as<float>(), rows, logits.dim(1), device, stream_);
  DRIFT_LAUNCHED("argmax");
  std::vector<int32_t> out(rows);
  DRIFT_CUDA(cudaMemcpyAsync(out.data(), device, rows * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  synchronize();
  return out;
}

}  // namespace drift
