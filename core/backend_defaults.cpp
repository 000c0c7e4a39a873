// The Backend defaults: host sampling over read-back logits, and refusals for the plugin
// services a backend does not implement.
#include "core/backend.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/sampler.h"

#include <algorithm>

namespace drift {

void Backend::convert(const Tensor& src, Tensor& dst) {
  DRIFT_CHECK(src.dtype() == dst.dtype(), "backend {}: no conversion from {} to {}", name(), dtype_name(src.dtype()),
              dtype_name(dst.dtype()));
  copy(src, dst);
}

Tensor Backend::load_weight(std::span<const RawTensor> row_blocks, int64_t /*pair_span: kept stacked*/) {
  std::vector<int64_t> shape = row_blocks[0].shape;
  shape[0] = 0;
  for (const RawTensor& part : row_blocks) shape[0] += part.shape[0];
  Tensor host = Tensor::zeros(shape);
  float* out = host.as<float>();
  for (const RawTensor& part : row_blocks) {
    const Tensor f32 = to_f32(TensorInfo{"", part.dtype, part.shape, part.data, 0, ""});
    std::copy(f32.as<float>(), f32.as<float>() + f32.numel(), out);
    out += f32.numel();
  }
  return upload(host);
}

void Backend::linear_qkv_rope_write(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& qkv, Tensor& q,
                                    Tensor& k, Tensor& v, LayerKV& kv, const std::vector<int32_t>& positions,
                                    const std::vector<float>& inv_freq, float attention_scale,
                                    const AttentionMetadata& meta) {
  linear(x, weight, bias, qkv);
  qkv_rope_write(qkv, q, k, v, kv, positions, inv_freq, attention_scale, meta);
}

void Backend::attention_variant(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                                int64_t block_size, const AttentionVariant& variant, Tensor& out) {
  if (!variant.plain())
    fail("backend {}: attention with sinks or a sliding window is not implemented (the CPU backend runs it)", name());
  attention(q, kv, meta, scale, block_size, out);
}

Tensor Backend::load_bytes(const RawTensor&) {
  fail("backend {}: packed (MXFP4) weights cannot be loaded as stored; they are expanded on load", name());
}

void Backend::moe_mlp(const Tensor&, const MoeWeights&, const MoeShape&, Tensor&) {
  fail("backend {}: mixture-of-experts layers are not implemented (the CPU backend runs them)", name());
}

void Backend::linear_swiglu(const Tensor& x, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act) {
  linear(x, gate_up, Tensor(), gate_up_out);
  silu_mul(gate_up_out, act);
}

bool Backend::linear_add_residual(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& delta,
                                  Tensor& residual, const NextNorm& next) {
  linear(x, weight, bias, delta);
  add_rms_norm(residual, delta, next.weight, next.eps, next.normed);
  return false;
}

void Backend::form_normed_rows(const NormedRows& in) {
  DRIFT_CHECK(!in.square_sums, "backend {} left no factored norm to form", name());
}

void Backend::normed_linear_qkv_rope_write(const NormedRows& in, const Tensor& weight, const Tensor& bias, Tensor& qkv,
                                           Tensor& q, Tensor& k, Tensor& v, LayerKV& kv,
                                           const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                                           float attention_scale, const AttentionMetadata& meta) {
  form_normed_rows(in);
  linear_qkv_rope_write(in.normed, weight, bias, qkv, q, k, v, kv, positions, inv_freq, attention_scale, meta);
}

void Backend::normed_linear_swiglu(const NormedRows& in, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act) {
  form_normed_rows(in);
  linear_swiglu(in.normed, gate_up, gate_up_out, act);
}

void Backend::qkv_rope_write(const Tensor& qkv, Tensor& q, Tensor& k, Tensor& v, LayerKV& kv,
                             const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                             float attention_scale, const AttentionMetadata& meta) {
  split_columns(qkv, {&q, &k, &v});
  rope(q, positions, inv_freq, attention_scale);
  rope(k, positions, inv_freq, attention_scale);
  write_kv(kv, k, v, meta);
}

void shape_row(float* logits, int64_t vocab, const RowSampling& row) {
  if (row.allowed) grammar::apply_token_mask(logits, vocab, *row.allowed);
  apply_logit_adjustments(logits, vocab, row.adjustments);
}

int32_t sample_shaped(const float* logits, int64_t vocab, const RowSampling& row) {
  if (row.adjustments.empty() && !row.allowed)
    return sample_token(logits, vocab, row.params, row.seed, row.output_index);
  std::vector<float> shaped(logits, logits + vocab);
  shape_row(shaped.data(), vocab, row);
  return sample_token(shaped.data(), vocab, row.params, row.seed, row.output_index);
}

std::vector<int32_t> Backend::pick_tokens(const Tensor& logits, std::span<const RowSampling> rows) {
  const Tensor host = to_host_f32(logits);
  const int64_t vocab = host.dim(1);
  DRIFT_CHECK(host.dim(0) == static_cast<int64_t>(rows.size()), "pick_tokens: {} logit rows for {} settings",
              host.dim(0), rows.size());
  std::vector<int32_t> picks(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) picks[r] = sample_shaped(host.as<float>() + r * vocab, vocab, rows[r]);
  return picks;
}

void Backend::silu_mul_pair(const Tensor&, const Tensor&, Tensor&) {
  fail("backend {} has no silu_mul service", name());
}
void Backend::softmax(const Tensor&, float, Tensor&) { fail("backend {} has no softmax service", name()); }
void Backend::top_k(const Tensor&, int32_t, Tensor&, Tensor&) { fail("backend {} has no top_k service", name()); }
void Backend::key_summary(const Tensor&, std::span<const int32_t>, std::span<const int32_t>, int64_t, Tensor&,
                          Tensor&) {
  fail("backend {} has no page_key_summary service", name());
}
void Backend::page_scores(const Tensor&, const Tensor&, const Tensor&, Tensor&) {
  fail("backend {} has no page_scores service", name());
}

}  // namespace drift
