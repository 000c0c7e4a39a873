#pragma once
// Backend: the narrow set of compute operations the model runner (and, through the host
// services, plugins) call. `cpu` is the fp32 reference; a `cuda` backend implements the same
// interface with bf16/fp16 storage and fp32 accumulation. Tensors passed in live on the
// backend's device; index metadata (ids, positions, slots, block tables) is passed as host
// arrays in ForwardMetadata so a device backend can upload it once per forward.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/grammar/token_mask.h"
#include "core/logit_adjustments.h"
#include "core/sampling_params.h"
#include "core/tensor.h"

namespace drift {

// Per-forward index metadata for the attention and KV-write ops (host memory).
struct AttentionMetadata {
  std::vector<int32_t> token_seq;              // [tokens] -> index into block_tables
  std::vector<int32_t> kv_len;                 // [tokens] positions visible in the block table
  std::vector<int64_t> slots;                  // [tokens] KV slot the token's K/V is written to
                                               // (-1: none, a padding token)
  std::vector<std::vector<int32_t>> block_tables;
  // One page list per sequence (1), or per (sequence, kv head) (num_kv_heads: the verification
  // policy's per-KV-head view, SpecPV). Then block_tables[s * H + h] is sequence s's list for kv
  // head h, and kv_len and mask_start hold one entry per (token, kv head), at t * H + h: each kv
  // head attends to its own list's positions. Mask rows stay one per token.
  int64_t tables_per_seq = 1;
  // Optional tree mask (see kernels/cpu/paged_attention.h); empty when causal.
  std::vector<int32_t> mask_start;
  std::vector<uint64_t> mask;
  int64_t mask_words = 0;
};

// A layer's attention beyond causal softmax (LayerSpec): sinks [num_heads] (a learned logit per
// head joins each softmax's denominator, with no value; GPT-OSS) and a window (> 0: a row sees its
// last `window` positions, its own included).
struct AttentionVariant {
  const Tensor* sinks = nullptr;
  int64_t window = 0;
  bool plain() const { return !sinks && window == 0; }
};

// One projection of every expert, [experts, outputs, inputs] (outputs first, as every linear
// weight) + bias [experts, outputs]: dense in the backend's compute dtype, or MXFP4 kept 4-bit
// where the backend keeps it (Backend::keeps_mxfp4; core/model/mxfp4.h is the format).
struct ExpertProjection {
  Tensor dense;   // [experts, outputs, inputs], or empty when MXFP4
  Tensor blocks;  // U8 [experts, outputs, inputs / 32, 16]: e2m1 codes, the lower nibble first
  Tensor scales;  // U8 [experts, outputs, inputs / 32]: E8M0 scales
  Tensor bias;    // [experts, outputs]
  bool mxfp4() const { return !blocks.empty(); }
  int64_t outputs() const { return mxfp4() ? blocks.dim(1) : dense.dim(1); }
  int64_t inputs() const { return mxfp4() ? blocks.dim(2) * 32 : dense.dim(2); }
};

// A mixture of experts as GPT-OSS computes it: router [experts, hidden] + bias [experts]; expert e
// computes h = gate_up[e] x + gate_up.bias[e] ([2 * inter, hidden]; gates at even outputs, ups at
// odd), then (h_up + 1) * h_gate * sigmoid(alpha h_gate) with gate <= limit and |up| <= limit,
// then down[e] ([hidden, inter]) + down.bias[e]. A token's experts are the experts_per_token
// largest router logits, weighted by the softmax over those logits.
struct MoeWeights {
  Tensor router, router_bias;
  ExpertProjection gate_up, down;
};
struct MoeShape {
  int64_t experts_per_token = 0;
  float limit = 7.0f, alpha = 1.702f;
};

// One layer's paged K and V: [num_slots, num_kv_heads, head_dim] each.
struct LayerKV {
  Tensor k;
  Tensor v;
};

// Everything index-like one forward feeds its ops, handed to the backend once per forward
// (begin_forward) so a device backend uploads it in one copy. The ops still receive the same
// host vectors: a backend recognises them (same storage) and uses its uploaded copy; any other
// vector (a plugin's compute-service call) is uploaded on its own.
struct ForwardInputs {
  const std::vector<int32_t>* tokens = nullptr;
  const std::vector<int32_t>* positions = nullptr;
  const AttentionMetadata* attention = nullptr;
  const std::vector<int32_t>* logit_rows = nullptr;
  // The sliding-window page group's metadata (ForwardBatch::window_attention), when the model
  // has one: uploaded with the rest, so its layers read it without a copy of their own.
  const AttentionMetadata* window_attention = nullptr;
};

// How one logit row becomes a token, exactly as plain decoding picks it (core/sampler.h): the
// request's sampling settings, its seed and the index in the output of the token picked.
struct RowSampling {
  SamplingParams params;
  uint64_t seed = 0;
  uint64_t output_index = 0;
  // Applied to the row's logits before the pick (core/logit_adjustments.h). Logprobs stay the
  // model's own (raw logits, as OpenAI and vLLM report them).
  std::vector<LogitAdjustment> adjustments;
  // Structured output: only these tokens may be picked (the others' logits become -infinity
  // before the adjustments). Null: any.
  std::shared_ptr<const grammar::TokenMask> allowed;
};

// The row's pick on the host: its logits shaped by its adjustments (on a copy: `logits` stays the
// model's, for logprobs), then sample_token.
int32_t sample_shaped(const float* logits, int64_t vocab, const RowSampling& row);
// The row's mask and adjustments applied to its logits in place.
void shape_row(float* logits, int64_t vocab, const RowSampling& row);

// A checkpoint tensor's bytes as stored (e.g. mapped from a safetensors file), in its own dtype.
struct RawTensor {
  const void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

// The residual stream between two pre-norm blocks: the next block's input is rms_norm(residual) *
// weight. A device backend may leave it factored (normed = residual * weight, rounded, plus the
// sums of squares of each kResidualNormGroup columns of each row, F32 [rows,
// residual_norm_groups(hidden)]) for the next projection to scale its outputs: no norm kernel.
constexpr int64_t kResidualNormGroup = 16;
inline int64_t residual_norm_groups(int64_t hidden) { return (hidden + kResidualNormGroup - 1) / kResidualNormGroup; }

// Where linear_add_residual leaves the next block's input.
struct NextNorm {
  const Tensor& weight;  // [hidden]
  float eps;
  Tensor& normed;       // [rows, hidden], compute dtype
  Tensor& square_sums;  // F32 [rows, residual_norm_groups(hidden)], when factored
};

// A pre-norm block's input: in `normed`, formed (square_sums null) or factored (see above).
struct NormedRows {
  const Tensor& residual;  // F32 [rows, hidden]
  const Tensor& weight;
  float eps;
  Tensor& normed;
  const Tensor* square_sums;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  // Storage dtype for weights and KV on this backend.
  virtual DType compute_dtype() const = 0;

  // Memory. alloc: zero-filled, lives as long as the tensor. scratch: valid until the next
  // begin_forward (a device backend serves it from a workspace reused across steps, so a step
  // allocates nothing); only for temporaries of one forward or one service call.
  virtual Tensor alloc(std::vector<int64_t> shape, DType dtype) = 0;
  virtual Tensor scratch(std::vector<int64_t> shape, DType dtype) { return alloc(std::move(shape), dtype); }
  // Starts a forward: the previous forward's scratch is released and `inputs` (which must stay
  // unchanged until the forward's outputs are read) are taken in.
  virtual void begin_forward(const ForwardInputs& /*inputs*/) {}
  // Ends it: the inputs are no longer referenced (scratch stays valid until the next begin).
  virtual void end_forward() {}

  // Forward graphs (CUDA graphs on a device): a backend may record the ops of a forward once per
  // shape and replay them. After begin_forward the model runner asks replay_forward(); a value is
  // the forward's output, computed (the runner runs no op). Otherwise, if
  // begin_forward_capture() says yes, the runner's ops are recorded instead of run, and
  // end_forward_capture(output) stores the recording and runs it. The runner only offers
  // forwards whose ops depend on nothing but the inputs' shapes and device copies.
  // A recording may also keep `extras`, further outputs the ops write (hidden states captured
  // for a draft model): replayed_extras() gives them back after a replay of that recording.
  virtual std::optional<Tensor> replay_forward() { return std::nullopt; }
  virtual bool begin_forward_capture() { return false; }
  virtual void end_forward_capture(const Tensor& /*output*/, std::vector<Tensor> /*extras*/ = {}) {}
  virtual std::vector<Tensor> replayed_extras() const { return {}; }
  virtual void set_forward_graphs(bool /*enabled*/) {}
  // Whether forwards are being recorded (the runner then pads small forwards to a few sizes).
  virtual bool records_forwards() const { return false; }
  virtual Tensor upload(const Tensor& host_f32) = 0;      // to device, in compute_dtype
  // A weight on the device in compute_dtype: the row blocks (same trailing shape) stacked in
  // order, e.g. q|k|v. The default converts on the host through fp32; a device backend converts
  // where the weight lands.
  // pair_span > 0: the weight's output features are consumed in pairs (r, r + pair_span / 2)
  // within spans of pair_span rows (gate | up: one span of 2 * intermediate; q | k | v for RoPE:
  // spans of head_dim), and it is passed only to the op made for it (linear_swiglu,
  // linear_qkv_rope_write). A backend may then store the rows in its own order (CUDA keeps each
  // pair in one GEMM tile so the GEMM finishes the pointwise op); the CPU keeps them stacked.
  virtual Tensor load_weight(std::span<const RawTensor> row_blocks, int64_t pair_span = 0);
  // Whether MXFP4 experts load as their 4-bit blocks and scales (load_bytes), computed from those
  // in moe_mlp; otherwise the loader expands them to dense weights.
  virtual bool keeps_mxfp4() const { return false; }
  // Packed bytes (U8, e.g. MXFP4 blocks) on the backend as stored. The default refuses.
  virtual Tensor load_bytes(const RawTensor& bytes);
  virtual Tensor to_host_f32(const Tensor& t) = 0;
  // Waits for all queued work (timing; a device backend runs ops asynchronously).
  virtual void synchronize() {}
  // Bytes of device memory free now (device backends), for sizing the KV pool.
  virtual std::optional<size_t> free_device_memory() { return std::nullopt; }
  // The stream device work is ordered on, handed to plugin hooks (nullptr on the CPU).
  virtual void* stream_handle() { return nullptr; }
  // dst = src converted to dst's dtype (same number of elements; same device).
  virtual void convert(const Tensor& src, Tensor& dst);

  // For each row of fp32 logits [rows.size(), vocab] the token sample_token (core/sampler.h)
  // picks with that row's settings: only the picks cross to the host. The default reads the
  // logits back and samples on the host.
  virtual std::vector<int32_t> pick_tokens(const Tensor& logits, std::span<const RowSampling> rows);

  // Ops. Shapes: x [rows, cols] unless stated; outputs are preallocated by the caller.
  virtual void embedding(const Tensor& table, const std::vector<int32_t>& ids, Tensor& out) = 0;
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& out) = 0;
  // out = x W^T + bias, W [out_features, in_features]; bias may be empty.
  virtual void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) = 0;
  // x [tokens, heads, head_dim] rotated in place.
  virtual void rope(Tensor& x, const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                    float attention_scale) = 0;
  virtual void write_kv(LayerKV& kv, const Tensor& k, const Tensor& v, const AttentionMetadata& meta) = 0;
  // The attention block's prologue: qkv [tokens, q | k | v] split into q, k, v, rope on q and k,
  // then write_kv(k, v). One pass on a device (k and v may stay untouched there); the default runs
  // the separate ops.
  virtual void qkv_rope_write(const Tensor& qkv, Tensor& q, Tensor& k, Tensor& v, LayerKV& kv,
                              const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                              float attention_scale, const AttentionMetadata& meta);
  // The attention block's projection and prologue: qkv = x weight^T + bias, then
  // qkv_rope_write. weight (and bias) loaded with pair_span = head_dim. One kernel on CUDA when
  // the forward is small; the default runs linear then qkv_rope_write.
  virtual void linear_qkv_rope_write(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& qkv, Tensor& q,
                                     Tensor& k, Tensor& v, LayerKV& kv, const std::vector<int32_t>& positions,
                                     const std::vector<float>& inv_freq, float attention_scale,
                                     const AttentionMetadata& meta);
  // q [tokens, heads, head_dim] -> out [tokens, heads, head_dim].
  virtual void attention(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                         int64_t block_size, Tensor& out) = 0;
  // attention with a layer's variant; the default runs plain attention and refuses a variant
  // (the CPU backend implements sinks and windows).
  virtual void attention_variant(const Tensor& q, const LayerKV& kv, const AttentionMetadata& meta, float scale,
                                 int64_t block_size, const AttentionVariant& variant, Tensor& out);
  // out [rows, hidden] = the mixture of experts of x [rows, hidden] (MoeWeights). The default
  // refuses (the CPU and CUDA backends implement it).
  virtual void moe_mlp(const Tensor& x, const MoeWeights& weights, const MoeShape& shape, Tensor& out);
  virtual void silu_mul(const Tensor& gate_up, Tensor& out) = 0;
  // The MLP's first half: act [rows, intermediate] = silu(x gate^T) * (x up^T), gate_up = gate | up
  // loaded with pair_span = 2 * intermediate; gate_up_out [rows, 2 * intermediate] is scratch the
  // op may use. The default runs linear then silu_mul.
  virtual void linear_swiglu(const Tensor& x, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act);
  virtual void add_inplace(Tensor& x, const Tensor& y) = 0;
  // residual += delta; out = rms_norm(residual): the step between two pre-norm blocks, one pass
  // on a device. residual is fp32 (the residual stream); delta and out the compute dtype.
  virtual void add_rms_norm(Tensor& residual, const Tensor& delta, const Tensor& weight, float eps, Tensor& out) {
    add_inplace(residual, delta);
    rms_norm(residual, weight, eps, out);
  }
  // residual (F32) += x weight^T + bias, each output rounded to the compute dtype before the add
  // (as add_inplace of a stored linear output); then the next block's input into next: returns
  // true when it is left factored (next.square_sums written), false when next.normed is formed.
  // delta [rows, out] is scratch. The default runs linear then add_rms_norm and returns false.
  virtual bool linear_add_residual(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& delta,
                                   Tensor& residual, const NextNorm& next);
  // Forms in.normed when it is factored (the consumer is an op without a NormedRows variant).
  virtual void form_normed_rows(const NormedRows& in);
  // linear_qkv_rope_write and linear_swiglu of a pre-norm block's input; the defaults form it first.
  virtual void normed_linear_qkv_rope_write(const NormedRows& in, const Tensor& weight, const Tensor& bias, Tensor& qkv,
                                            Tensor& q, Tensor& k, Tensor& v, LayerKV& kv,
                                            const std::vector<int32_t>& positions, const std::vector<float>& inv_freq,
                                            float attention_scale, const AttentionMetadata& meta);
  virtual void normed_linear_swiglu(const NormedRows& in, const Tensor& gate_up, Tensor& gate_up_out, Tensor& act);
  // Splits x [rows, sum(widths)] column-wise into outs[i] [rows, widths[i]] (fused q|k|v).
  virtual void split_columns(const Tensor& x, const std::vector<Tensor*>& outs) = 0;
  // The inverse: out [rows, sum(widths)] = parts[i] [rows, widths[i]] side by side (same dtype).
  virtual void join_columns(const std::vector<const Tensor*>& parts, Tensor& out) = 0;
  // out[i] = x[rows[i]]: selects the rows whose logits are wanted.
  virtual void gather_rows(const Tensor& x, const std::vector<int32_t>& rows, Tensor& out) = 0;
  // dst = src, same shape and dtype (e.g. capturing a layer's hidden states).
  virtual void copy(const Tensor& src, Tensor& dst) = 0;
  // --- the plugin compute services' own ops (drift/plugin.h); a backend without them refuses ---
  // out = silu(gate) * up, elementwise (out may be gate or up).
  virtual void silu_mul_pair(const Tensor& gate, const Tensor& up, Tensor& out);
  // out = softmax over the last dimension of x / temperature (out may be x).
  virtual void softmax(const Tensor& x, float temperature, Tensor& out);
  // The k largest of each row of x [rows, v], descending, ties by lowest index, NaN last:
  // values F32 [rows, k], indices I32 [rows, k].
  virtual void top_k(const Tensor& x, int32_t k, Tensor& values, Tensor& indices);
  // For page pages[i] of `keys` ([slots, kv_heads, head_dim], block_size slots a page): the
  // elementwise max / min over its first filled[i] (>= 1) slots into kmax / kmin F32
  // [pages, kv_heads, head_dim].
  virtual void key_summary(const Tensor& keys, std::span<const int32_t> pages, std::span<const int32_t> filled,
                           int64_t block_size, Tensor& kmax, Tensor& kmin);
  // Query-aware page scores (SpecPV / Quest): out F32 [kv_heads, pages] with out[h, p] the mean,
  // over the rows of q [n, heads, head_dim] (compute dtype or F32) and kv head h's query heads,
  // of max(q . kmax[p, h], q . kmin[p, h]); kmax / kmin F32 [pages, kv_heads, head_dim]; fp32 math.
  virtual void page_scores(const Tensor& q, const Tensor& kmax, const Tensor& kmin, Tensor& out);

  // Copies KV page `src` to `dst` in every layer (copy-on-write).
  virtual void copy_page(std::vector<LayerKV>& layers, int32_t src, int32_t dst, int64_t block_size) = 0;
  // Moves KV slot src[i] to dst[i] in every layer, in order (speculation's commit compaction).
  virtual void copy_slots(std::vector<LayerKV>& layers, std::span<const int64_t> src,
                          std::span<const int64_t> dst) = 0;
};

// "cpu" (always) or "cuda" (when built with CUDA and a GPU is present), storing `storage` (cpu:
// F32; cuda: BF16 or F16). Throws DriftError naming the backend otherwise.
std::unique_ptr<Backend> create_backend(const std::string& name, DType storage);
std::unique_ptr<Backend> create_backend(const std::string& name);  // the backend's default storage
// The backend a config names, storing what engine.dtype asks for ("auto": float32 on cpu; on cuda
// the checkpoint's own float16 or bfloat16, bfloat16 for float32 checkpoints). Errors name the key.
struct EngineConfig;
std::unique_ptr<Backend> create_backend(const EngineConfig& config);
// Whether this build has the CUDA backend (nvcc was found at configure time).
bool cuda_backend_compiled();

}  // namespace drift
