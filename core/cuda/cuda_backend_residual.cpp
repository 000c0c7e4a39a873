// The CUDA backend's residual stream between two pre-norm blocks: the GEMM that adds into the
// stream (o_proj, down) leaves the next block's input factored -- residual * norm weight, and the
// sums of squares of each 16 columns -- and the next block's q/k/v or gate/up projection scales
// each row's sums by its 1 / rms before its pointwise op: in the skinny GEMM's epilogue (up to 32
// rows; no kernel runs between the two GEMMs, where a decode step used to run a residual-add +
// RMSNorm kernel), or, for larger forwards, in the pointwise kernel after a cuBLASLt GEMM into
// fp32 (kernels/cuda/residual_norm.cuh). Every forward size takes the same arithmetic, so a
// decode step and a verification of many sequences differ only where their GEMMs sum in another
// order. Consumers that cannot scale (Qwen3's q/k norms, the lm_head, weights not in the paired
// layout, k % 8 != 0) form the rows first, at every forward size alike. fp16 storage keeps the
// one-pass add + norm kernel (see linear_add_residual).
#include <algorithm>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/tensor_kind.h"
#include "core/error.h"
#include "kernels/cuda/ops.h"

namespace drift {

using cuda_backend::expect_dtype;

static_assert(cuda::kNormGroup == kResidualNormGroup, "the backend interface's norm groups are the kernels'");

namespace {

void expect_sums(const Tensor& square_sums, int64_t rows, int64_t dim) {
  expect_dtype(square_sums, DType::F32, "residual square sums");
  DRIFT_CHECK(square_sums.numel() == rows * cuda::norm_groups(dim),
              "residual square sums: {} values for {} rows of {} columns (want {} a row)", square_sums.numel(), rows,
              dim, cuda::norm_groups(dim));
}

void expect_rows(const Tensor& t, int64_t rows, int64_t dim, const char* what) {
  DRIFT_CHECK(t.numel() == rows * dim, "{}: {} values for {} rows of {} columns", what, t.numel(), rows, dim);
}

}  // namespace

bool CudaBackend::linear_add_residual(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& delta,
                                      Tensor& residual, const NextNorm& next) {
  // fp16 keeps the formed rows: residual * weight, not yet normalised, can pass fp16's 65504 where
  // a model's residual stream has its outliers (bf16 has fp32's range).
  if (storage_ != DType::BF16) return Backend::linear_add_residual(x, weight, bias, delta, residual, next);
  expect_dtype(x, storage_, "linear input");
  expect_dtype(weight, storage_, "linear weight");
  DRIFT_CHECK(weight.ndim() == 2 && weight.dim(1) > 0 && x.numel() % weight.dim(1) == 0,
              "projection into the residual stream: weight {}, input {}", weight.shape_string(), x.shape_string());
  const int64_t k = weight.dim(1), n = weight.dim(0), rows = x.numel() / k;
  if (!bias.empty()) {
    expect_dtype(bias, storage_, "linear bias");
    DRIFT_CHECK(bias.numel() == n, "linear bias of {} for {} features", bias.numel(), n);
  }
  expect_dtype(residual, DType::F32, "residual stream");
  expect_rows(residual, rows, n, "residual stream");
  expect_dtype(next.weight, storage_, "rms_norm weight");
  DRIFT_CHECK(next.weight.numel() == n, "rms_norm weight of {} columns for a residual stream of {}",
              next.weight.numel(), n);
  expect_dtype(next.normed, storage_, "normed rows");
  expect_rows(next.normed, rows, n, "normed rows");
  expect_sums(next.square_sums, rows, n);
  const cuda::FactoredNorm factored{next.square_sums.as<float>(), next.weight.data(), next.normed.data()};
  const void* b = bias.empty() ? nullptr : bias.data();
  if (cuda::skinny_gemm_mma_add_residual(x.data(), weight.data(), b, residual.as<float>(), factored, rows, n, k,
                                         storage_type_, stream_)) {
    DRIFT_LAUNCHED("skinny_gemm_mma_add_residual");
    return true;
  }
  expect_dtype(delta, storage_, "linear output");
  expect_rows(delta, rows, n, "linear output");
  linear(x, weight, bias, delta);  // cuBLASLt (more than 32 rows) or the CUDA-core GEMM (k % 8 != 0)
  cuda::add_residual_factored(residual.as<float>(), delta.data(), factored, rows, n, storage_type_, stream_);
  DRIFT_LAUNCHED("add_residual_factored");
  return true;
}

std::optional<cuda::RowScales> CudaBackend::row_scales(const NormedRows& in, int64_t rows) {
  if (!in.square_sums) return std::nullopt;
  const int64_t dim = in.weight.numel();
  expect_dtype(in.residual, DType::F32, "residual stream");
  expect_rows(in.residual, rows, dim, "residual stream");
  expect_dtype(in.normed, storage_, "normed rows");
  expect_rows(in.normed, rows, dim, "normed rows");
  expect_sums(*in.square_sums, rows, dim);
  // The scales' own buffer, for the calls that compute them ahead (more than one row tile).
  float* workspace = rows > 8 ? static_cast<float*>(arena_.allocate(rows * sizeof(float))) : nullptr;
  return cuda::RowScales{in.square_sums->as<float>(), in.eps, workspace};
}

void CudaBackend::form_normed_rows(const NormedRows& in) {
  const int64_t dim = in.weight.numel(), rows = dim > 0 ? in.residual.numel() / dim : 0;
  const std::optional<cuda::RowScales> scales = row_scales(in, rows);
  if (!scales) return;  // formed already
  expect_dtype(in.weight, storage_, "rms_norm weight");
  cuda::rms_norm_from_sums(in.residual.as<float>(), scales->square_sums, in.weight.data(), in.eps, rows, dim,
                           in.normed.data(), storage_type_, stream_);
  DRIFT_LAUNCHED("rms_norm_from_sums");
}

// For a factored input of more than 32 rows: scales = the rows' 1 / rms, then the GEMM of the
// factored rows into fp32, chunk by chunk, each chunk finished by finish(sums, first row, rows).
// The fp32 output is one arena buffer per forward (scaled_output_, grown when the gate/up
// projection follows q/k/v), so no layer allocates more.
template <typename Finish>
void CudaBackend::scaled_projection(const NormedRows& in, const cuda::RowScales& scales, const Tensor& weight,
                                    int64_t rows, Finish finish) {
  const int64_t dim = weight.dim(1), n = weight.dim(0);
  // Chunks are whole 128-row tiles, cuBLASLt's largest: a chunk of 585 rows (64 MB at the 8B
  // shape's gate/up) left a partial tile in each of 14 GEMMs. A multiple of 128 rows also starts
  // each chunk's input 256 bytes apart, cuBLASLt's alignment.
  constexpr int64_t kTileRows = 128;
  const int64_t chunk = std::min(rows, std::max(kTileRows, scaled_output_cap_floats_ / n / kTileRows * kTileRows));
  if (scaled_output_floats_ < chunk * n) {
    scaled_output_ = static_cast<float*>(arena_.allocate(chunk * n * sizeof(float)));
    scaled_output_floats_ = chunk * n;
  }
  cuda::row_scales(scales.square_sums, scales.eps, rows, dim, scales.workspace, stream_);
  DRIFT_LAUNCHED("row_scales");
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t count = std::min(chunk, rows - first);
    const Tensor x = Tensor::wrap(static_cast<char*>(in.normed.data()) + first * dim * dtype_size(storage_),
                                  {count, dim}, storage_, Device::CUDA, nullptr);
    Tensor y = Tensor::wrap(scaled_output_, {count, n}, DType::F32, Device::CUDA, nullptr);
    linear(x, weight, Tensor(), y);
    finish(scaled_output_, first, count);
  }
}

// As linear_qkv_rope_write, the projection scaling its rows' sums when `in` is factored. Whether
// it scales depends on shapes only (paired weight, k % 8 == 0), never on the row count: the
// skinny GEMM up to 32 rows, cuBLASLt into fp32 then rope_qkv_scaled above, the same arithmetic.
void CudaBackend::normed_linear_qkv_rope_write(const NormedRows& in, const Tensor& weight, const Tensor& bias,
                                               Tensor& qkv, Tensor& q, Tensor& k, Tensor& v, LayerKV& kv,
                                               const std::vector<int32_t>& positions,
                                               const std::vector<float>& inv_freq, float attention_scale,
                                               const AttentionMetadata& meta) {
  expect_dtype(weight, storage_, "linear weight");
  DRIFT_CHECK(weight.ndim() == 2 && weight.dim(1) > 0 && q.ndim() == 3, "q/k/v projection: weight {}, q {}",
              weight.shape_string(), q.shape_string());
  const int64_t dim = weight.dim(1), rows = in.residual.numel() / dim;
  const std::optional<cuda::RowScales> scales = row_scales(in, rows);
  if (!scales || dim % 8 != 0 || !pairs_rows(weight.dim(0), q.dim(2))) {
    Backend::normed_linear_qkv_rope_write(in, weight, bias, qkv, q, k, v, kv, positions, inv_freq, attention_scale,
                                          meta);
    return;
  }
  const cuda::RopeQkvOutputs out = rope_qkv_outputs(q, kv, positions, inv_freq, attention_scale, meta);
  DRIFT_CHECK(weight.dim(0) == (out.heads + 2 * out.kv_heads) * out.head_dim && q.dim(0) == rows &&
                  static_cast<int64_t>(positions.size()) == rows && static_cast<int64_t>(meta.slots.size()) == rows,
              "q/k/v projection of {} rows: weight {}, q {}, {} positions, {} slots", rows, weight.shape_string(),
              q.shape_string(), positions.size(), meta.slots.size());
  if (!bias.empty()) {
    expect_dtype(bias, storage_, "q/k/v bias");
    DRIFT_CHECK(bias.numel() == weight.dim(0), "q/k/v bias of {} for {} features", bias.numel(), weight.dim(0));
  }
  const void* b = bias.empty() ? nullptr : bias.data();
  if (rows <= cuda::kSkinnyMaxRows) {
    DRIFT_CHECK(cuda::skinny_gemm_mma_rope_qkv(in.normed.data(), *scales, weight.data(), b, out, rows, dim,
                                               storage_type_, stream_),
                "the skinny q/k/v GEMM refused {} rows of {}", rows, dim);
    DRIFT_LAUNCHED("skinny_gemm_mma_rope_qkv (row scales)");
    return;
  }
  scaled_projection(in, *scales, weight, rows, [&](const float* sums, int64_t first, int64_t count) {
    cuda::RopeQkvOutputs part = out;
    part.q = static_cast<char*>(out.q) + first * q.dim(1) * q.dim(2) * dtype_size(storage_);
    part.positions += first;
    part.slots += first;
    cuda::rope_qkv_scaled(sums, scales->workspace + first, b, part, count, storage_type_, stream_);
    DRIFT_LAUNCHED("rope_qkv_scaled");
  });
}

// As linear_swiglu, the projection scaling its rows' sums when `in` is factored (shapes decide, as
// above).
void CudaBackend::normed_linear_swiglu(const NormedRows& in, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act) {
  expect_dtype(gate_up, storage_, "linear weight");
  DRIFT_CHECK(gate_up.ndim() == 2 && gate_up.dim(1) > 0 && act.ndim() == 2, "gate/up projection: weight {}, act {}",
              gate_up.shape_string(), act.shape_string());
  const int64_t dim = gate_up.dim(1), rows = in.residual.numel() / dim, inter = act.dim(1);
  const std::optional<cuda::RowScales> scales = row_scales(in, rows);
  if (!scales || dim % 8 != 0 || !pairs_rows(gate_up.dim(0), gate_up.dim(0))) {
    Backend::normed_linear_swiglu(in, gate_up, gate_up_out, act);
    return;
  }
  expect_dtype(act, storage_, "swiglu output");
  DRIFT_CHECK(gate_up.dim(0) == 2 * inter && act.dim(0) == rows, "gate/up projection: weight {} for act {}",
              gate_up.shape_string(), act.shape_string());
  if (rows <= cuda::kSkinnyMaxRows) {
    DRIFT_CHECK(cuda::skinny_gemm_mma_swiglu(in.normed.data(), *scales, gate_up.data(), act.data(), rows, inter, dim,
                                             storage_type_, stream_),
                "the skinny gate/up GEMM refused {} rows of {}", rows, dim);
    DRIFT_LAUNCHED("skinny_gemm_mma_swiglu (row scales)");
    return;
  }
  scaled_projection(in, *scales, gate_up, rows, [&](const float* sums, int64_t first, int64_t count) {
    void* part = static_cast<char*>(act.data()) + first * inter * dtype_size(storage_);
    cuda::silu_mul_scaled(sums, scales->workspace + first, part, count, inter, storage_type_, stream_);
    DRIFT_LAUNCHED("silu_mul_scaled");
  });
}

}  // namespace drift
