// CudaBackend's mixture-of-experts MLP (GPT-OSS; kernels/cpu/moe.h is the reference): the router
// GEMM into fp32 logits, routing and grouping on the device (kernels/cuda/moe_routing.cu; one
// launch for decode-sized batches), then each chosen expert's gate_up with the clamped SwiGLU in
// its epilogue, its down projection and the weighted sum (kernels/cuda/moe_experts.cu's GEMV up to
// 32 rows; above, moe_grouped_gemm.cu on tensor cores and a separate SwiGLU). Nothing reads back
// to the host, so a recorded forward replays it. MXFP4 experts stay 4-bit on the device
// (load_bytes) and are dequantized in the kernels.
#include <algorithm>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/tensor_kind.h"
#include "core/error.h"

namespace drift {
namespace {

using cuda_backend::elem_type;
using cuda_backend::expect_device;
using cuda_backend::expect_dtype;

// The most scratch one chunk of rows takes (router logits, each entry's fp32 gate_up and down
// outputs, its activation): a long prefill runs in chunks of rows so its experts' fp32
// intermediates never grow with the prompt.
constexpr int64_t kMoeChunkBytes = int64_t{64} << 20;

// Rows a chunk takes: per row its logits, expert ids, weights and order entries, and per entry
// its fp32 gate_up and down outputs and its activation (of the storage type); the counts and
// offsets and the arena's rounding fit in the slack.
int64_t rows_per_chunk(int64_t experts, int64_t k, int64_t hidden, int64_t inter, int64_t storage_bytes) {
  const int64_t per_row = 4 * (experts + 3 * k) + k * (4 * 2 * inter + storage_bytes * inter + 4 * hidden);
  return std::max<int64_t>(1, (kMoeChunkBytes - (int64_t{64} << 10)) / per_row);
}

void check_projection(const ExpertProjection& p, int64_t experts, int64_t outputs, int64_t inputs, DType storage,
                      const char* what) {
  DRIFT_CHECK(p.outputs() == outputs && p.inputs() == inputs, "moe {}: [{}, {}] per expert, expected [{}, {}]", what,
              p.outputs(), p.inputs(), outputs, inputs);
  if (p.mxfp4()) {
    expect_dtype(p.blocks, DType::U8, what);
    expect_dtype(p.scales, DType::U8, what);
    DRIFT_CHECK(p.blocks.dim(0) == experts && p.scales.dim(0) == experts, "moe {}: {} experts, expected {}", what,
                p.blocks.dim(0), experts);
  } else {
    expect_dtype(p.dense, storage, what);
    DRIFT_CHECK(p.dense.dim(0) == experts, "moe {}: {} experts, expected {}", what, p.dense.dim(0), experts);
  }
  expect_dtype(p.bias, storage, what);
}

// Up to this many rows a forward (decode, verification) the experts run as GEMVs that sum an entry
// alike whatever else is in the batch (batch invariance, as the dense skinny GEMM up to 32 rows);
// above, on tensor cores, whose sums round apart (within rounding, as cuBLASLt's for the dense
// projections). Kept for decode too: on the H100 gpt-oss-20b's batch-64 decode took 33.5 ms with
// the GEMVs, 25.2 ms with the grouped GEMM (llama.cpp: 27.3 ms).
constexpr int64_t kGemvMaxRows = 32;

// The GEMV's operands for one projection over a grouping.
cuda::ExpertGemvArgs gemv_args(const void* x, const ExpertProjection& p, int64_t experts, int64_t rows_divisor,
                               int64_t entries, const int32_t* order, const int32_t* offsets, const int32_t* active,
                               cuda::ElemType storage) {
  cuda::ExpertGemvArgs a;
  a.x = x;
  a.in = p.inputs();
  a.out = p.outputs();
  a.experts = experts;
  a.rows_divisor = rows_divisor;
  a.entries = entries;
  a.bias = p.bias.data();
  a.order = order;
  a.offsets = offsets;
  a.active = active;
  a.storage = storage;
  return a;
}

const uint8_t* blocks_of(const ExpertProjection& p) { return static_cast<const uint8_t*>(p.blocks.data()); }
const uint8_t* scales_of(const ExpertProjection& p) { return static_cast<const uint8_t*>(p.scales.data()); }

// y [entries, outputs] (fp32) = each routed entry's expert projection of its x row: the GEMV.
bool expert_gemv(const cuda::ExpertGemvArgs& a, const ExpertProjection& p, float* y, cudaStream_t stream) {
  return p.mxfp4() ? cuda::mxfp4_expert_gemv(a, blocks_of(p), scales_of(p), y, stream)
                   : cuda::dense_expert_gemv(a, p.dense.data(), y, stream);
}
// act [entries, inter] (storage) = the SwiGLU of gate_up's projection: the GEMV with its epilogue.
bool expert_gemv_swiglu(const cuda::ExpertGemvArgs& a, const ExpertProjection& p, const MoeShape& shape, void* act,
                        cudaStream_t stream) {
  return p.mxfp4()
             ? cuda::mxfp4_expert_gemv_swiglu(a, blocks_of(p), scales_of(p), shape.limit, shape.alpha, act, stream)
             : cuda::dense_expert_gemv_swiglu(a, p.dense.data(), shape.limit, shape.alpha, act, stream);
}
// The same product on tensor cores (prefill); false where the GEMM does not take the format
// (MXFP4 with fp16 storage).
bool tensor_core_gemm_takes(const ExpertProjection& p, cuda::ElemType storage) {
  return !p.mxfp4() || storage == cuda::ElemType::BF16;
}
bool expert_gemm(const cuda::ExpertGemvArgs& a, const ExpertProjection& p, float* y, cudaStream_t stream) {
  return p.mxfp4() ? cuda::mxfp4_expert_gemm(a.x, a.in, a.out, a.experts, a.rows_divisor, a.entries, blocks_of(p),
                                             scales_of(p), a.bias, a.order, a.offsets, y, a.storage, stream)
                   : cuda::dense_expert_gemm(a.x, a.in, a.out, a.experts, a.rows_divisor, a.entries, p.dense.data(),
                                             a.bias, a.order, a.offsets, y, a.storage, stream);
}

}  // namespace

Tensor CudaBackend::load_bytes(const RawTensor& bytes) {
  DRIFT_CHECK(bytes.dtype == DType::U8, "CUDA backend: packed weights are uint8, got {}", dtype_name(bytes.dtype));
  Tensor out = alloc(bytes.shape, DType::U8);
  DRIFT_CUDA(cudaMemcpyAsync(out.data(), bytes.data, out.numel(), cudaMemcpyHostToDevice, stream_));
  synchronize();  // the source is host memory the caller may release
  return out;
}

void CudaBackend::moe_mlp(const Tensor& x, const MoeWeights& w, const MoeShape& shape, Tensor& out) {
  expect_dtype(x, storage_, "moe input");
  expect_device(out, "moe output");
  const int64_t rows = x.dim(0), hidden = x.dim(1), experts = w.router.dim(0), k = shape.experts_per_token;
  const int64_t inter = w.down.inputs();
  DRIFT_CHECK(k >= 1 && k <= std::min(experts, cuda::kMaxExpertsPerToken),
              "moe: {} experts per token of {} (the CUDA backend routes at most {})", k, experts,
              cuda::kMaxExpertsPerToken);
  DRIFT_CHECK(w.router.dim(1) == hidden && out.dim(0) == rows && out.dim(1) == hidden,
              "moe: router {} and output {} for input {}", w.router.shape_string(), out.shape_string(),
              x.shape_string());
  check_projection(w.gate_up, experts, 2 * inter, hidden, storage_, "gate_up");
  check_projection(w.down, experts, hidden, inter, storage_, "down");
  const int64_t chunk = rows_per_chunk(experts, k, hidden, inter, static_cast<int64_t>(dtype_size(storage_)));
  const bool decode_sized = rows <= kGemvMaxRows;
  const bool tensor_cores = !decode_sized && tensor_core_gemm_takes(w.gate_up, storage_type_) &&
                            tensor_core_gemm_takes(w.down, storage_type_);
  const auto x_row = static_cast<int64_t>(hidden * dtype_size(x.dtype()));
  const auto out_row = static_cast<int64_t>(hidden * dtype_size(out.dtype()));
  // Each chunk's scratch is given back to the arena before the next chunk takes its own (one
  // stream orders the kernels), so a long prefill holds one chunk's worth, not every chunk's.
  const cuda_backend::DeviceArena::Position chunk_start = arena_.position();
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t n = std::min(chunk, rows - first), entries = n * k;
    const Tensor xs = Tensor::wrap(static_cast<char*>(const_cast<void*>(x.data())) + first * x_row, {n, hidden},
                                   x.dtype(), Device::CUDA, nullptr);
    Tensor logits = scratch({n, experts}, DType::F32);
    linear(xs, w.router, w.router_bias, logits);
    Tensor ids = scratch({entries}, DType::I32), weights = scratch({entries}, DType::F32);
    Tensor counts = scratch({experts}, DType::I32), offsets = scratch({experts + 1}, DType::I32);
    Tensor order = scratch({entries}, DType::I32), active = scratch({experts + 1}, DType::I32);
    Tensor act = scratch({entries, inter}, storage_), y = scratch({entries, hidden}, DType::F32);
    if (decode_sized) {  // one launch routes and groups
      DRIFT_CHECK(cuda::moe_route_group(logits.as<float>(), n, experts, k, ids.as<int32_t>(), weights.as<float>(),
                                        counts.as<int32_t>(), offsets.as<int32_t>(), order.as<int32_t>(),
                                        active.as<int32_t>(), stream_),
                  "moe: routing {} experts per token of {}", k, experts);
    } else {
      DRIFT_CHECK(cuda::moe_route(logits.as<float>(), n, experts, k, ids.as<int32_t>(), weights.as<float>(), stream_),
                  "moe: routing {} experts per token of {}", k, experts);
      cuda::moe_group(ids.as<int32_t>(), entries, experts, counts.as<int32_t>(), offsets.as<int32_t>(),
                      order.as<int32_t>(), active.as<int32_t>(), stream_);
    }
    const auto group = [&](const void* in, const ExpertProjection& p, int64_t rows_divisor) {
      return gemv_args(in, p, experts, rows_divisor, entries, order.as<int32_t>(), offsets.as<int32_t>(),
                       active.as<int32_t>(), storage_type_);
    };
    const cuda::ExpertGemvArgs gate_up = group(xs.data(), w.gate_up, k);
    if (tensor_cores) {
      Tensor h = scratch({entries, 2 * inter}, DType::F32);
      DRIFT_CHECK(expert_gemm(gate_up, w.gate_up, h.as<float>(), stream_),
                  "moe gate_up: {} inputs are not whole "
                  "blocks of 32",
                  hidden);
      cuda::moe_swiglu(h.as<float>(), entries, inter, shape.limit, shape.alpha, act.data(), storage_type_, stream_);
    } else {
      DRIFT_CHECK(expert_gemv_swiglu(gate_up, w.gate_up, shape, act.data(), stream_),
                  "moe gate_up: {} inputs are not whole blocks of 32", hidden);
    }
    // Down reads each entry's own activation row: the entries are its rows (one slot each).
    const cuda::ExpertGemvArgs down = group(act.data(), w.down, 1);
    DRIFT_CHECK(tensor_cores ? expert_gemm(down, w.down, y.as<float>(), stream_)
                             : expert_gemv(down, w.down, y.as<float>(), stream_),
                "moe down: {} inputs are not whole blocks of 32", inter);
    cuda::moe_combine(y.as<float>(), weights.as<float>(), n, k, hidden,
                      static_cast<char*>(out.data()) + first * out_row, elem_type(out), stream_);
    DRIFT_LAUNCHED("moe_mlp");
    arena_.move_to(chunk_start);
  }
}

}  // namespace drift
