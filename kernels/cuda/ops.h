#pragma once
// CUDA kernels of the CUDA backend, behind plain C++ declarations (no CUDA types but
// cudaStream_t, no engine headers): core/cuda/ calls these, tests/cuda checks them against the
// CPU backend. Storage is bf16 or fp16 (weights, KV, activations) with fp32 accumulation; the
// residual stream and the logits are fp32. `ElemType` says what an argument holds.
#include <cstdint>

#include <cuda_runtime.h>

namespace drift::cuda {

// F32: activations; BF16 / F16: the storage type of weights, KV and activations (`storage`
// arguments name which one a kernel reads and writes).
enum class ElemType : int { F32 = 0, BF16 = 1, F16 = 2 };

// --- elementwise (elementwise.cu) ---
// out[i, :] = table[ids[i], :]; table [vocab, dim] of `storage`.
void embedding(const void* table, const int32_t* ids, int64_t rows, int64_t dim, void* out, ElemType out_type,
               ElemType storage, cudaStream_t stream);
// dst = convert(src), n elements.
void convert(const void* src, ElemType src_type, void* dst, ElemType dst_type, int64_t n, cudaStream_t stream);
// out[r, :] = silu(gate[r, :]) * up[r, :], both of `storage`, from gate_up [rows, 2 inter]: gate
// then up (gate_up_paired false), or the paired-rows layout of span 2 inter (a GEMM's output with
// the weight pair_rows laid out: gate column c at paired_row(c), its up 8 columns on).
void silu_mul(const void* gate_up, bool gate_up_paired, void* out, int64_t rows, int64_t inter, ElemType storage,
              cudaStream_t stream);
// out = silu(gate) * up elementwise, n elements of any activation type (out may be gate or up).
void silu_mul_pair(const void* gate, ElemType gate_type, const void* up, ElemType up_type, void* out,
                   ElemType out_type, int64_t n, cudaStream_t stream);
// x (fp32 or bf16) += y (fp32 or bf16), n elements.
void add_inplace(void* x, ElemType x_type, const void* y, ElemType y_type, int64_t n, cudaStream_t stream);
// y[r, c] += bias[c] (bias [n] of `storage`, y [rows, n] of y_type).
void add_bias(void* y, ElemType y_type, const void* bias, int64_t rows, int64_t n, ElemType storage,
              cudaStream_t stream);
// dst[r, 0:width] = src[r, offset:offset+width] for `rows` rows, byte-wise columns.
void copy_columns(const void* src, int64_t src_row_bytes, int64_t offset_bytes, void* dst, int64_t width_bytes,
                  int64_t rows, cudaStream_t stream);
// out[i, :] = x[rows[i], :]; row_bytes per row; rows on the device.
void gather_rows(const void* x, const int32_t* rows, int64_t count, int64_t row_bytes, void* out,
                 cudaStream_t stream);

// --- normalisation (rms_norm.cu) ---
// out[r] = x[r] / rms(x[r]) * weight (weight [dim] of `storage`); out may be x.
void rms_norm(const void* x, ElemType x_type, const void* weight, float eps, int64_t rows, int64_t dim, void* out,
              ElemType out_type, ElemType storage, cudaStream_t stream);
// residual (fp32) += delta; out = rms_norm(residual) (delta, weight, out of `storage`): the fused
// pre-norm step.
void add_rms_norm(float* residual, const void* delta, const void* weight, float eps, int64_t rows, int64_t dim,
                  void* out, ElemType storage, cudaStream_t stream);

// --- the residual stream's norm, factored (residual_norm.cu, residual_norm.cuh) ---
// Between two pre-norm blocks, rms_norm(residual) * weight is the next projection's input. The
// GEMM that adds into the residual stream (o_proj, down) leaves it factored: `factored` = residual
// * weight (rounded to storage) and the sum of squares of each kNormGroup columns of each updated
// row (square_sums [rows, norm_groups(dim)], fp32). The next projection reads `factored` as its
// input rows and scales each row's sums by the row's 1 / rms (RowScales) before its pointwise op:
// in the skinny GEMM's epilogue up to 32 rows (no norm kernel between the two GEMMs, and the
// scale waits on nothing before the epilogue), in silu_mul_scaled / rope_qkv_scaled after an fp32
// cuBLASLt GEMM above. Every forward size takes the same arithmetic (residual_norm.cuh). The
// backend uses it for bf16 storage (residual * weight can pass fp16's range).
constexpr int64_t kNormGroup = 16;  // = the skinny tensor-core GEMM's features a block
constexpr int64_t norm_groups(int64_t dim) { return (dim + kNormGroup - 1) / kNormGroup; }
// Where the producer leaves the factored rows.
struct FactoredNorm {
  float* square_sums = nullptr;  // [rows, norm_groups(dim)]
  const void* weight = nullptr;  // the next norm's [dim], of `storage`
  void* factored = nullptr;      // [rows, dim] of `storage`
};
// The consumer's per-row scale: 1 / sqrt(sum of the row's square_sums / k + eps). A GEMM of one
// row tile (up to 8 rows) adds the sums up itself after its k loop; a larger one reads the scales
// a small kernel computes into `workspace` first (the same function: the same bits), which costs
// less than the in-loop sums of four row tiles.
struct RowScales {
  const float* square_sums = nullptr;  // [rows, norm_groups(k)]
  float eps = 0.0f;
  float* workspace = nullptr;  // [rows] fp32, for calls of more than 8 rows
};
// residual (fp32) += delta (of `storage`), then the factored norm of the updated rows: the add for
// a GEMM whose epilogue cannot do it (cuBLASLt above 32 rows, the CUDA-core skinny GEMM).
void add_residual_factored(float* residual, const void* delta, const FactoredNorm& next, int64_t rows, int64_t dim,
                           ElemType storage, cudaStream_t stream);
// scales [rows] = each row's 1 / rms from the factored norm's sums.
void row_scales(const float* square_sums, float eps, int64_t rows, int64_t dim, float* scales, cudaStream_t stream);
// out [rows, dim] (of `storage`) = rms_norm(residual) * weight from the factored norm's sums: the
// rows formed on their own, for a consumer that cannot scale its sums.
void rms_norm_from_sums(const float* residual, const float* square_sums, const void* weight, float eps, int64_t rows,
                        int64_t dim, void* out, ElemType storage, cudaStream_t stream);

// --- rotary embedding (rope.cu) ---
// x [tokens, heads, head_dim] of `storage` rotated in place (rotate-half layout, as transformers).
void rope(void* x, const int32_t* positions, const float* inv_freq, int64_t tokens, int64_t heads, int64_t head_dim,
          float attention_scale, ElemType storage, cudaStream_t stream);

// Where the attention block's prologue puts q, k and v: q [tokens, heads, head_dim] rotated; k
// rotated and v copied into k_cache / v_cache ([slots, kv_heads, head_dim]) at slots[t] (negative:
// a padding token, no KV); positions [tokens] and inv_freq [head_dim / 2] on the device.
struct RopeQkvOutputs {
  void* q = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const int32_t* positions = nullptr;
  const int64_t* slots = nullptr;
  const float* inv_freq = nullptr;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  float attention_scale = 1.0f;
};
// The prologue fused (split + rope + write_kv) from qkv [tokens, (heads + 2 kv_heads) * head_dim]:
// q | k | v heads, each natural (paired false) or in the paired-rows layout of span head_dim (the
// output of a GEMM whose weight pair_rows laid out). Bit-identical to the separate ops.
void rope_qkv_to_cache(const void* qkv, bool paired, const RopeQkvOutputs& out, int64_t tokens, ElemType storage,
                       cudaStream_t stream);

// The factored norm's consumer half (residual_norm.cu) for more than 32 rows: the GEMM of the
// factored rows into fp32 (no bias), then these scale each row by scales[row], add the bias and
// round to storage exactly as the skinny GEMM's epilogue does, and finish SwiGLU (gate_up [rows,
// 2 inter] paired with span 2 inter) or the attention prologue (qkv [tokens, q | k | v] paired
// with span head_dim; bias the same layout, or null).
void silu_mul_scaled(const float* gate_up, const float* scales, void* act, int64_t rows, int64_t inter,
                     ElemType storage, cudaStream_t stream);
void rope_qkv_scaled(const float* qkv, const float* scales, const void* bias, const RopeQkvOutputs& out, int64_t tokens,
                     ElemType storage, cudaStream_t stream);

// --- the paired-rows weight layout (paired_rows.cu, paired_rows.cuh) ---
// A projection whose output features are consumed in pairs (r, r + span / 2) within spans of
// `span` rows (gate and up: one span of 2 * intermediate rows; q/k/v heads for RoPE: spans of
// head_dim) can store its rows so that each pair lands in the same 16-row tile of the skinny
// tensor-core GEMM, 8 rows apart. Then that GEMM's epilogue holds both features of a pair and
// finishes the pointwise op itself (skinny_gemm_mma_swiglu, skinny_gemm_mma_rope_qkv), saving a
// kernel per layer. Possible when span % 16 == 0 and the rows are whole spans.
inline bool can_pair_rows(int64_t rows, int64_t span) {
  return rows > 0 && span > 0 && span % 16 == 0 && rows % span == 0;
}
// paired = stacked [rows, row_bytes] with rows moved into the layout (device to device; both on
// `stream`; they must not overlap). Requires can_pair_rows. Returns the copies' first error.
cudaError_t pair_rows(const void* stacked, void* paired, int64_t rows, int64_t row_bytes, int64_t span,
                      cudaStream_t stream);

// --- paged KV (kv_cache.cu) ---
// k_cache[slots[t]] = k[t], v_cache likewise; row = num_kv_heads * head_dim 16-bit elements. A
// negative slot (a padding token) writes nothing.
void write_kv(void* k_cache, void* v_cache, const void* k, const void* v, const int64_t* slots, int64_t tokens,
              int64_t row_elems, cudaStream_t stream);
// Copies `bytes` bytes at page src to page dst of a buffer (one layer's K or V).
void copy_page(void* cache, int64_t page_bytes, int32_t src, int32_t dst, cudaStream_t stream);
// For i in order: slot dst[i] = slot src[i] (the order matters when a destination is a later
// source; each thread walks the pairs in order for its own bytes).
void copy_slots(void* cache, int64_t slot_bytes, const int64_t* src, const int64_t* dst, int64_t count,
                cudaStream_t stream);

// --- attention (paged_attention.cu) ---
struct PagedAttentionParams {
  ElemType storage = ElemType::BF16;  // of q, the caches and out
  const void* q = nullptr;        // [tokens, num_heads, head_dim]
  const void* k_cache = nullptr;  // [slots, num_kv_heads, head_dim]
  const void* v_cache = nullptr;
  void* out = nullptr;            // [tokens, num_heads, head_dim]
  int64_t tokens = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
  float scale = 1.0f;
  const int32_t* token_seq = nullptr;     // [tokens]
  const int32_t* block_tables = nullptr;  // [num_seqs, table_stride]
  int64_t table_stride = 0;
  const int32_t* kv_len = nullptr;        // [tokens * tables_per_seq]
  int64_t tables_per_seq = 1;             // num_kv_heads: page lists per (sequence, kv head), as
                                          // kernels/cpu/paged_attention.h
  int64_t max_kv_len = 0;                 // max over kv_len (host value: sizes the grid)
  // Optional query tiles: [num_tiles][2] = (first query, count), runs of at most
  // kAttentionTileQueries consecutive queries of one sequence covering every query in order. With
  // them, sequences with several queries (trees, prefill) read each K/V row once per tile.
  const int32_t* tiles = nullptr;
  int64_t num_tiles = 0;
  int64_t max_tile_queries = 0;           // the largest count (0: kAttentionTileQueries)
  const int32_t* mask_start = nullptr;    // optional tree mask, as kernels/cpu/paged_attention.h
  const uint64_t* mask = nullptr;
  int64_t mask_words = 0;
  // fp32 workspace for the per-chunk partial results; queries are processed in slices that fit.
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  // Optional (GPT-OSS), as kernels/cpu/paged_attention.h: sinks [num_heads] of `storage`, a logit
  // per head in every softmax's denominator with no value; window > 0: a row sees only the
  // positions within `window` of its own (a tree row: of its path's, its ancestors at their
  // depths). Either takes the chunked kernel (the flash and tile paths have neither yet).
  const void* sinks = nullptr;
  int64_t window = 0;
};
// Positions are split into fixed chunks of kAttentionChunk by absolute position, whatever the
// batch: a query's result never depends on what else is in the forward (batch invariance).
// 64 positions: enough blocks to fill the GPU for one decode query (a 4K context is 64 chunks
// per kv head), few enough partials to merge at 32K.
constexpr int64_t kAttentionChunk = 64;
// 64 queries: with a GQA group of 4, a prefill tile fills four 64-row tensor-core blocks that
// share the tile's K/V reads through L2.
constexpr int64_t kAttentionTileQueries = 64;
// The workspace one query needs (a slice of queries needs that many times it).
int64_t attention_workspace_bytes_per_query(int64_t num_heads, int64_t head_dim, int64_t max_kv_len);
// Returns false for an unsupported head_dim (8, 16, 32, 64, 128 and 256 are supported), a group
// (num_heads / num_kv_heads) that is not whole, or a workspace too small for one query.
bool paged_attention(const PagedAttentionParams& p, cudaStream_t stream);

// --- skinny GEMM (skinny_gemm.cu) ---
// y[r, n] = sum_k x[r, k] * w[n, k] (+ bias[n]) for the few rows decode and verification produce:
// bandwidth-bound, one pass over w for up to kSkinnyMaxRows rows, and every element reduced in the
// same order whatever `rows` is (a verify forward and a decode forward round alike).
constexpr int64_t kSkinnyMaxRows = 32;
// x [rows, k], w [n, k], bias [n] or null, all of `storage`; y [rows, n] of y_type. Loads are
// 16 bytes wide when k % 8 == 0 (narrower otherwise). Returns false unless 1 <= rows <= kSkinnyMaxRows.
// The tensor-core variant (skinny_gemm_mma.cu), for k % 8 == 0; returns false otherwise. The
// backend uses it whenever it applies and skinny_gemm (CUDA cores, any k) for the rest, so a
// given weight always goes through one kernel.
bool skinny_gemm_mma(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows,
                     int64_t n, int64_t k, ElemType storage, cudaStream_t stream);
bool skinny_gemm(const void* x, const void* w, const void* bias, void* y, ElemType y_type, int64_t rows, int64_t n,
                 int64_t k, ElemType storage, cudaStream_t stream);
// skinny_gemm_mma with a pointwise epilogue, for weights in the paired-rows layout; bit-identical
// to skinny_gemm_mma into a storage-typed output followed by the pointwise kernel. Same
// conditions (false: nothing launched).
// act [rows, inter] = silu(x gate^T) * (x up^T), w_paired = gate | up paired with span 2 * inter.
bool skinny_gemm_mma_swiglu(const void* x, const void* w_paired, void* act, int64_t rows, int64_t inter, int64_t k,
                            ElemType storage, cudaStream_t stream);
// The attention prologue from h [rows, k]: x (q | k | v weights paired with span head_dim)^T +
// bias (same layout, or null), rotated and written as rope_qkv_to_cache does.
bool skinny_gemm_mma_rope_qkv(const void* x, const void* w_paired, const void* bias, const RopeQkvOutputs& out,
                              int64_t rows, int64_t k, ElemType storage, cudaStream_t stream);

// residual [rows, n] += x w^T + bias (each sum rounded to storage first, as a stored output then
// add_residual_factored would), leaving the next norm factored.
bool skinny_gemm_mma_add_residual(const void* x, const void* w, const void* bias, float* residual,
                                  const FactoredNorm& next, int64_t rows, int64_t n, int64_t k, ElemType storage,
                                  cudaStream_t stream);
// The two pointwise-epilogue GEMMs reading factored rows (x = the producer's `factored`, k = its
// dim): each row's sums scaled by its 1 / rms before the epilogue's op.
bool skinny_gemm_mma_swiglu(const void* x, const RowScales& scales, const void* w_paired, void* act, int64_t rows,
                            int64_t inter, int64_t k, ElemType storage, cudaStream_t stream);
bool skinny_gemm_mma_rope_qkv(const void* x, const RowScales& scales, const void* w_paired, const void* bias,
                              const RopeQkvOutputs& out, int64_t rows, int64_t k, ElemType storage,
                              cudaStream_t stream);

// --- mixture of experts (moe_routing.cu; kernels/cpu/moe.h is the reference) ---
constexpr int64_t kMaxExpertsPerToken = 8;
// Each row's experts_per_token largest logits of fp32 logits [rows, experts] (ties: the lower
// expert), as expert_ids [rows, experts_per_token] in descending order, and their softmax
// weights [rows, experts_per_token] (fp32). False (nothing launched) for experts_per_token
// outside 1..min(kMaxExpertsPerToken, experts).
bool moe_route(const float* logits, int64_t rows, int64_t experts, int64_t experts_per_token, int32_t* expert_ids,
               float* weights, cudaStream_t stream);
// The entries of expert_ids [entries] (a routing's (row, slot) pairs, flattened) grouped by
// expert, stably: order [entries] lists entry indices, expert e's at order[offsets[e] ..
// offsets[e + 1]) in entry order; counts [experts], offsets [experts + 1]; active [experts + 1]:
// active[0] experts have entries, their ids ascending from active[1]. No atomics: the same
// routing always groups alike.
void moe_group(const int32_t* expert_ids, int64_t entries, int64_t experts, int32_t* counts, int32_t* offsets,
               int32_t* order, int32_t* active, cudaStream_t stream);
// moe_route then moe_group in one block, for decode-sized batches (tens of rows; the same results).
bool moe_route_group(const float* logits, int64_t rows, int64_t experts, int64_t experts_per_token, int32_t* expert_ids,
                     float* weights, int32_t* counts, int32_t* offsets, int32_t* order, int32_t* active,
                     cudaStream_t stream);

// The experts (moe_experts.cu), MXFP4 weights kept 4-bit: blocks U8 [experts, out, in / 32, 16]
// (e2m1 codes, the lower nibble first) and scales U8 [experts, out, in / 32] (E8M0), as gpt-oss
// checkpoints store them. One projection over moe_group's entries:
struct ExpertGemvArgs {
  const void* x = nullptr;  // [rows, in] of `storage`; entry i reads row i / rows_divisor
  int64_t in = 0, out = 0, experts = 0;
  int64_t rows_divisor = 1;  // experts_per_token when x holds the tokens (gate_up), 1 when the entries (down)
  int64_t entries = 0;
  const void* bias = nullptr;      // [experts, out] of `storage`, or null
  const int32_t* order = nullptr;  // moe_group's
  const int32_t* offsets = nullptr;
  const int32_t* active = nullptr;
  ElemType storage = ElemType::BF16;
};
// y [entries, out] (fp32) = W_e x[row] + b_e for every entry. Each chosen expert's weights are read
// once for all its rows; an entry's sum does not depend on the other entries. False (nothing
// launched) when in % 32 != 0.
bool mxfp4_expert_gemv(const ExpertGemvArgs& a, const uint8_t* blocks, const uint8_t* scales, float* y,
                       cudaStream_t stream);
// The same over dense experts: weights [experts, out, in] of `storage` (checkpoints that store
// their experts unquantized). Both formats give the same bits for the same values.
bool dense_expert_gemv(const ExpertGemvArgs& a, const void* weights, float* y, cudaStream_t stream);
// gate_up with GPT-OSS's clamped SwiGLU in the epilogue (out = 2 inter: gates at even, ups at odd
// outputs): act [entries, inter] of `storage`, the bits moe_swiglu gives over the GEMV's y.
bool mxfp4_expert_gemv_swiglu(const ExpertGemvArgs& a, const uint8_t* blocks, const uint8_t* scales, float limit,
                              float alpha, void* act, cudaStream_t stream);
bool dense_expert_gemv_swiglu(const ExpertGemvArgs& a, const void* weights, float limit, float alpha, void* act,
                              cudaStream_t stream);
// The same products on tensor cores for prefill-sized batches (moe_grouped_gemm.cu): entries =
// the routing's entries (rows * experts_per_token), y [entries, out] fp32. The MXFP4 weights are
// decoded to `storage` a tile at a time in shared memory (exact for bf16; fp16's range can lose
// the smallest scales, so fp16 storage keeps the GEMV). Sums in another order than the GEMV.
// False (nothing launched) when in % 32 != 0.
bool mxfp4_expert_gemm(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                       int64_t entries, const uint8_t* blocks, const uint8_t* scales, const void* bias,
                       const int32_t* order, const int32_t* offsets, float* y, ElemType storage, cudaStream_t stream);
bool dense_expert_gemm(const void* x, int64_t in, int64_t out, int64_t experts, int64_t experts_per_token,
                       int64_t entries, const void* weights, const void* bias, const int32_t* order,
                       const int32_t* offsets, float* y, ElemType storage, cudaStream_t stream);
// act [entries, inter] (of `storage`) = GPT-OSS's clamped SwiGLU of gate_up [entries, 2 inter]
// (fp32; gates at even, ups at odd outputs).
void moe_swiglu(const float* gate_up, int64_t entries, int64_t inter, float limit, float alpha, void* act,
                ElemType storage, cudaStream_t stream);
// out [rows, hidden] (of out_type) = each row's experts' y [rows * experts_per_token, hidden]
// weighted by moe_route's weights, summed in slot order.
void moe_combine(const float* y, const float* weights, int64_t rows, int64_t experts_per_token, int64_t hidden,
                 void* out, ElemType out_type, cudaStream_t stream);

// --- selection (argmax.cu) ---
// out[r] = the index of the largest logit in row r (lowest index on ties), fp32 logits [rows, vocab].
void argmax_rows(const float* logits, int64_t rows, int64_t vocab, int32_t* out, cudaStream_t stream);

// --- plugin compute services and sampling (softmax.cu, row_sort.cu, sampling.cu, key_summary.cu,
// page_scores.cu) ---
// out[r, :] = softmax(x[r, :] / temperature), fp32 math; out may be x.
void softmax_rows(const void* x, ElemType x_type, float temperature, int64_t rows, int64_t cols, void* out,
                  ElemType out_type, cudaStream_t stream);
// order[r, :] = the columns of fp32 x [rows, cols] by descending value, ties by lowest column,
// NaN last: the host sampler's and top_k's order. Needs row_sort_workspace_bytes of device
// workspace; returns false when it is too small or rows * cols exceeds INT32_MAX.
size_t row_sort_workspace_bytes(int64_t rows, int64_t cols);
bool sort_rows_descending(const float* x, int64_t rows, int64_t cols, int32_t* order, void* workspace,
                          size_t workspace_bytes, cudaStream_t stream);
// values[r, j] = x[r, order[r, j]], indices[r, j] = order[r, j] for j < k (either may be null).
void take_sorted(const float* x, const int32_t* order, int64_t rows, int64_t cols, int64_t k, float* values,
                 int32_t* indices, cudaStream_t stream);
// One row's sampling settings (core/sampling_params.h) and its seeded uniform draw in [0, 1).
struct SampleRowParams {
  double temperature = 0.0;  // rows with 0 are skipped (greedy: argmax_rows)
  int64_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  double uniform = 0.0;
};
// out[r] = the token core/sampler.cpp's sample_token picks from fp32 logits row r, given the row's
// descending order (sort_rows_descending) and params (device memory).
void sample_sorted_rows(const float* logits, const int32_t* order, int64_t rows, int64_t vocab,
                        const SampleRowParams* params, int32_t* out, cudaStream_t stream);
// For each listed page i: kmax/kmin[i, :] = elementwise max/min of the key rows (of `storage`) of
// its first filled[i] (>= 1) slots; a row is row_elems = num_kv_heads * head_dim elements.
void key_summary(const void* keys, int64_t row_elems, int64_t block_size, const int32_t* pages, const int32_t* filled,
                 int64_t num_pages, float* kmax, float* kmin, ElemType storage, cudaStream_t stream);
// Query-aware page scores: out[h, p] (fp32 [num_kv_heads, num_pages]) = the mean, over the rows r
// of q [rows, num_heads, head_dim] (of q_type) and the query heads g of kv head h's group (heads
// h * G .. h * G + G - 1, G = num_heads / num_kv_heads), of max(q[r, g] . kmax[p, h],
// q[r, g] . kmin[p, h]), kmax / kmin fp32 [num_pages, num_kv_heads, head_dim]. fp32 math in a
// fixed summation order (the same scores on every run). Returns false, launching nothing, when
// num_heads is not a multiple of num_kv_heads, q or 64 pages of summaries hold 2^31 elements or
// more, or num_kv_heads exceeds 65535.
bool page_scores(const void* q, ElemType q_type, const float* kmax, const float* kmin, int64_t rows, int64_t num_heads,
                 int64_t num_kv_heads, int64_t head_dim, int64_t num_pages, float* out, cudaStream_t stream);

}  // namespace drift::cuda
