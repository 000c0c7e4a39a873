// The CUDA backend's ops beyond the model forward: token picks (greedy and seeded sampling on the
// device, only the picks cross the bus), dtype conversion, and the plugin compute services'
// own ops (SwiGLU on separate tensors, softmax, top-k, page key summaries, page scores).
#include <algorithm>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/tensor_kind.h"
#include "core/sampler.h"
#include "kernels/cuda/logit_adjustments.h"
#include "kernels/cuda/ops.h"

namespace drift {

using cuda_backend::elem_type;
using cuda_backend::expect_device;
using cuda_backend::expect_dtype;

template <typename T>
T* CudaBackend::device_copy(std::span<const T> host) {
  auto* device = static_cast<T*>(arena_.allocate(std::max<size_t>(host.size_bytes(), 1)));
  staging_.upload(device, host.data(), host.size_bytes(), stream_);  // through pinned memory: no stream wait
  return device;
}

std::vector<int32_t> CudaBackend::read_ints(const int32_t* device, int64_t count) {
  std::vector<int32_t> out(count);
  if (count > 0)
    DRIFT_CUDA(cudaMemcpyAsync(out.data(), device, count * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  synchronize();
  return out;
}

const float* CudaBackend::as_f32(const Tensor& x) {
  if (x.dtype() == DType::F32) return x.as<float>();
  Tensor f32 = scratch(x.shape(), DType::F32);
  convert(x, f32);
  return f32.as<float>();
}

const int32_t* CudaBackend::sorted_columns(const float* x, int64_t rows, int64_t cols) {
  const size_t bytes = cuda::row_sort_workspace_bytes(rows, cols);
  void* workspace = arena_.allocate(bytes);
  auto* order = static_cast<int32_t*>(arena_.allocate(rows * cols * sizeof(int32_t)));
  if (!cuda::sort_rows_descending(x, rows, cols, order, workspace, bytes, stream_))
    fail("CUDA backend: cannot sort {} rows of {} values (at most 2^31 values in one call)", rows, cols);
  DRIFT_LAUNCHED("sort_rows_descending");
  return order;
}

std::optional<size_t> CudaBackend::free_device_memory() {
  size_t free = 0, total = 0;
  DRIFT_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

void CudaBackend::convert(const Tensor& src, Tensor& dst) {
  DRIFT_CHECK(src.numel() == dst.numel(), "convert of {} into {}", src.shape_string(), dst.shape_string());
  cuda::convert(src.data(), elem_type(src), dst.data(), elem_type(dst), src.numel(), stream_);
  DRIFT_LAUNCHED("convert");
}

// The rows' structured-output masks, in one launch: the masks go up packed, one per masked row.
void CudaBackend::mask_logits(const Tensor& logits, std::span<const RowSampling> rows) {
  const int64_t vocab = logits.dim(1), words = (vocab + 31) / 32;
  std::vector<int32_t> masked;
  std::vector<uint32_t> bits;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].allowed) continue;
    masked.push_back(static_cast<int32_t>(r));
    const std::vector<uint32_t>& w = rows[r].allowed->words;
    const size_t copied = std::min<size_t>(w.size(), static_cast<size_t>(words));
    bits.insert(bits.end(), w.begin(), w.begin() + static_cast<std::ptrdiff_t>(copied));
    bits.resize(bits.size() + (static_cast<size_t>(words) - copied), 0u);  // ids past the mask: not allowed
  }
  if (masked.empty()) return;
  const auto* device_rows = device_copy(std::span<const int32_t>(masked));
  const auto* device_bits = device_copy(std::span<const uint32_t>(bits));
  cuda::mask_logits(const_cast<float*>(logits.as<float>()), vocab, device_rows, device_bits, words,
                    static_cast<int64_t>(masked.size()), stream_);
  DRIFT_LAUNCHED("mask_logits");
}

// The rows' logit adjustments, in place, in one launch (nothing when no row shapes its logits).
void CudaBackend::shape_logits(const Tensor& logits, std::span<const RowSampling> rows) {
  mask_logits(logits, rows);
  std::vector<cuda::LogitAdjustmentEntry> entries;
  for (size_t r = 0; r < rows.size(); ++r)
    for (const LogitAdjustment& a : rows[r].adjustments)
      if (a.token >= 0 && a.token < logits.dim(1))
        entries.push_back({static_cast<int32_t>(r), a.token, a.before, a.positive_divisor, a.negative_factor, a.after});
  if (entries.empty()) return;
  const auto* device = device_copy(std::span<const cuda::LogitAdjustmentEntry>(entries));
  cuda::adjust_logits(const_cast<float*>(logits.as<float>()), logits.dim(1), device,
                      static_cast<int64_t>(entries.size()), stream_);
  DRIFT_LAUNCHED("adjust_logits");
}

// Greedy rows are an argmax; sampled rows sort their logits once and walk them as the host
// sampler does, with the row's seeded uniform draw computed here on the host.
std::vector<int32_t> CudaBackend::pick_tokens(const Tensor& logits, std::span<const RowSampling> rows) {
  expect_dtype(logits, DType::F32, "pick_tokens logits");
  expect_device(logits, "pick_tokens logits");
  const int64_t count = logits.dim(0), vocab = logits.dim(1);
  DRIFT_CHECK(count == static_cast<int64_t>(rows.size()), "pick_tokens: {} logit rows for {} settings", count,
              rows.size());
  if (count == 0) return {};
  shape_logits(logits, rows);
  auto* picks = static_cast<int32_t*>(arena_.allocate(count * sizeof(int32_t)));
  cuda::argmax_rows(logits.as<float>(), count, vocab, picks, stream_);
  DRIFT_LAUNCHED("argmax");
  std::vector<cuda::SampleRowParams> params(rows.size());
  bool any_sampled = false;
  for (size_t r = 0; r < rows.size(); ++r) {
    const SamplingParams& p = rows[r].params;
    if (p.temperature == 0.0) continue;
    any_sampled = true;
    params[r] = {p.temperature, p.top_k, p.top_p, p.min_p, uniform_for(rows[r].seed, rows[r].output_index)};
  }
  if (any_sampled) {
    const int32_t* order = sorted_columns(logits.as<float>(), count, vocab);
    const auto* device_params = device_copy(std::span<const cuda::SampleRowParams>(params));
    cuda::sample_sorted_rows(logits.as<float>(), order, count, vocab, device_params, picks, stream_);
    DRIFT_LAUNCHED("sample_sorted_rows");
  }
  return read_ints(picks, count);
}

void CudaBackend::silu_mul_pair(const Tensor& gate, const Tensor& up, Tensor& out) {
  cuda::silu_mul_pair(gate.data(), elem_type(gate), up.data(), elem_type(up), out.data(), elem_type(out), gate.numel(),
                      stream_);
  DRIFT_LAUNCHED("silu_mul_pair");
}

void CudaBackend::softmax(const Tensor& x, float temperature, Tensor& out) {
  const int64_t cols = x.ndim() == 0 ? 1 : x.dim(x.ndim() - 1);
  cuda::softmax_rows(x.data(), elem_type(x), temperature, x.numel() / std::max<int64_t>(cols, 1), cols, out.data(),
                     elem_type(out), stream_);
  DRIFT_LAUNCHED("softmax");
}

void CudaBackend::top_k(const Tensor& x, int32_t k, Tensor& values, Tensor& indices) {
  expect_dtype(values, DType::F32, "top_k values");
  expect_dtype(indices, DType::I32, "top_k indices");
  const int64_t rows = x.dim(0), cols = x.dim(1);
  if (rows == 0) return;
  const float* f32 = as_f32(x);
  const int32_t* order = sorted_columns(f32, rows, cols);
  cuda::take_sorted(f32, order, rows, cols, k, values.as<float>(), indices.as<int32_t>(), stream_);
  DRIFT_LAUNCHED("take_sorted");
}

void CudaBackend::key_summary(const Tensor& keys, std::span<const int32_t> pages, std::span<const int32_t> filled,
                              int64_t block_size, Tensor& kmax, Tensor& kmin) {
  expect_dtype(keys, storage_, "key_summary keys");
  expect_dtype(kmax, DType::F32, "key_summary kmax");
  expect_dtype(kmin, DType::F32, "key_summary kmin");
  if (pages.empty()) return;
  cuda::key_summary(keys.data(), keys.dim(1) * keys.dim(2), block_size, device_copy(pages), device_copy(filled),
                    static_cast<int64_t>(pages.size()), kmax.as<float>(), kmin.as<float>(), storage_type_, stream_);
  DRIFT_LAUNCHED("key_summary");
}

void CudaBackend::page_scores(const Tensor& q, const Tensor& kmax, const Tensor& kmin, Tensor& out) {
  if (q.dtype() != DType::F32) expect_dtype(q, storage_, "page_scores q");
  expect_dtype(kmax, DType::F32, "page_scores kmax");
  expect_dtype(kmin, DType::F32, "page_scores kmin");
  expect_dtype(out, DType::F32, "page_scores out");
  for (const Tensor* t : {&q, &kmax, &kmin, static_cast<const Tensor*>(&out)}) expect_device(*t, "page_scores");
  if (!cuda::page_scores(q.data(), elem_type(q), kmax.as<float>(), kmin.as<float>(), q.dim(0), q.dim(1), kmax.dim(1),
                         q.dim(2), kmax.dim(0), out.as<float>(), stream_))
    fail("CUDA backend: page_scores of q {} over summaries {} is too large for one call", q.shape_string(),
         kmax.shape_string());
  DRIFT_LAUNCHED("page_scores");
}

}  // namespace drift
