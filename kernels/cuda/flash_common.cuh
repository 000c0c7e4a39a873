#pragma once
// What the tensor-core attention kernels share (flash_attention.cu: query tiles of up to 64 rows,
// fused or split; flash_decode.cu: one warp per 16 rows, split): staging helpers, the split fold,
// and one warp's arithmetic on one 64-position K/V tile. Every kernel runs a row through exactly
// these functions in the same order, so a row's bits do not depend on which kernel ran it
// (batch invariance across decode and verification forwards).
#include <mutex>
#include <type_traits>

#include "kernels/cuda/attention_entry.cuh"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/smem_staging.cuh"

namespace drift::cuda::flash {

constexpr int kTile = 64;           // positions per staged K/V tile
static_assert(kFlashSplit % kTile == 0, "a split is whole tiles");

template <int HEAD_DIM>
constexpr int kChunks = HEAD_DIM / 8;  // 16-byte chunks per row

// Shared-memory row r, 16-byte chunk c -> element offset, XOR-swizzled so the 8 rows an ldmatrix
// reads at one logical chunk fall in 8 different bank groups (whatever the row width).
template <int HEAD_DIM>
__device__ __forceinline__ int swizzled(int r, int c) {
  constexpr int C = kChunks<HEAD_DIM>;
  const int flip = C >= 8 ? (r & 7) : ((r / (8 / C)) & (C - 1));
  return r * HEAD_DIM + (c ^ flip) * 8;
}

// Staging layouts: where row r's 16-byte chunk c of a staged tile goes (element offset).
// The ldmatrix kernels' rows are whole head_dim rows, swizzled as above.
template <int HEAD_DIM>
struct LdmatrixLayout {
  __device__ static int offset(int r, int c) { return swizzled<HEAD_DIM>(r, c); }
};
// The warpgroup MMA's 128-byte-swizzle layout (flash_prefill_wgmma.cu): the tile is cut into
// 64-element column blocks of ROWS rows each, a row's 128 bytes contiguous, its chunk c at c ^ (r % 8)
// (the hardware swizzles address bits 4-6 by bits 7-9, so blocks start 1024-byte aligned).
template <int ROWS>
struct Swizzle128Layout {
  __device__ static int offset(int r, int c) { return (c >> 3) * ROWS * 64 + r * 64 + (((c & 7) ^ (r & 7)) << 3); }
};

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  const typename Pair<T>::type v = pack_pair<T>(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

constexpr float kLog2e = 1.4426950408889634f;

// 2^x in one instruction (denormal results flush to zero: weights below 2^-126 of the row's
// largest). Maxes and fold factors are in the log2 domain (tile_softmax).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One split's partial folded into the running result: the single definition both modes use, with
// explicit roundings (no contraction can differ between the call sites). A split that saw nothing
// (m_c = -inf) is skipped by the callers. a, b: the factors of the old and new outputs, which
// depend only on the running max before the split (M) and the split's max (m_c).
__device__ __forceinline__ float fold_factors(float M, float m_c, float& a, float& b) {
  const float m = fmaxf(M, m_c);
  a = M == m ? 1.0f : exp2_ftz(__fsub_rn(M, m));
  b = m_c == m ? 1.0f : exp2_ftz(__fsub_rn(m_c, m));
  return m;
}
__device__ __forceinline__ float fold_sum(float L, float a, float l_c, float b) { return fmaf(L, a, __fmul_rn(l_c, b)); }
__device__ __forceinline__ void fold(float& M, float& L, float m_c, float l_c, float& a, float& b) {
  M = fold_factors(M, m_c, a, b);
  L = fold_sum(L, a, l_c, b);
}
__device__ __forceinline__ float fold_out(float o, float a, float o_c, float b) { return fmaf(o, a, __fmul_rn(o_c, b)); }
__device__ __forceinline__ float finish(float o, float L) { return L > 0.0f ? __fdiv_rn(o, L) : 0.0f; }

// A learned attention sink (GPT-OSS: a logit per head, p.sinks) joins a row's softmax as one more
// position with no value: folded in after every split, as a split of max `sink` (log2 domain), sum
// 1 and output 0. Updates the row's sum L (its max M after every split) and returns the factor its
// output takes before finish(). Without sinks: 1 and L as it is (the same bits as no fold).
template <typename T>
__device__ __forceinline__ float fold_sink(const PagedAttentionParams& p, int64_t head, float M, float& L) {
  if (!p.sinks) return 1.0f;
  const float sink = __fmul_rn(to_float(static_cast<const T*>(p.sinks)[head]), kLog2e);
  float a, b;
  fold_factors(M, sink, a, b);
  L = fold_sum(L, a, 1.0f, b);
  return a;
}

struct FlashLayout {
  // 32-bit where the kernels divide by it: a 64-bit division is a long inline sequence.
  int32_t group = 1;       // query heads per kv head
  int32_t row_blocks = 1;  // blocks of rows per (tile, kv head) (64 or 16 rows: the kernel's)
  int64_t max_splits = 1;  // split stride of the workspace
  int64_t splits_per_block = 1;  // split mode: consecutive splits a block walks (each written out)
};

// Workspace per (query, head, split): [max (log2 domain), sum, out[HEAD_DIM]].
__device__ __forceinline__ float* partial_of(const PagedAttentionParams& p, const FlashLayout& f, int64_t t,
                                             int64_t head, int64_t split, int head_dim) {
  return static_cast<float*>(p.workspace) + ((t * p.num_heads + head) * f.max_splits + split) * (head_dim + 2);
}

// What a thread needs of one of its two rows (g and g + 8 of its warp's m16 tile).
struct RowInfo {
  bool real = false;  // a row of the block (not past its last (query, head))
  int64_t t = 0, head = 0, entry = 0;
  int64_t len = 0;  // visible length
  int64_t mask_from = 0;  // positions from here on follow the mask row
  int64_t open_end = 0;   // min(len, mask_from): positions before it are all visible (from `first` on)
  int64_t first = 0;      // a windowed layer's earliest own position seen (window_first; 0: all)
  const uint64_t* mask_row = nullptr;
};

// The sliding window holds a tree row's masked positions by their rank among its visible ones
// (window_first's rule); a path no deeper than the window sees them all (first <= mask_from), so
// the count runs only for deeper ones.
__device__ __forceinline__ bool row_sees(const PagedAttentionParams& p, const RowInfo& r, int64_t pos) {
  if (pos < r.open_end) return pos >= r.first;
  if (pos >= r.len) return false;
  const int64_t bit = pos - r.mask_from;
  if (bit >= p.mask_words * 64 || !((r.mask_row[bit / 64] >> (bit % 64)) & 1u)) return false;
  return r.first <= r.mask_from || r.mask_from + visible_below(p, r.t, bit) >= r.first;
}

// Which of a thread's 16 score columns of the tile at pos0 row r does not see (bit 2n + e: position
// pos0 + 8n + 2 quad + e). A loop, not unrolled into the score loop: the mask test is long, and the
// kernel's code must stay small (a decode block walks it once, with a cold instruction cache).
__device__ __forceinline__ uint32_t hidden_positions(const PagedAttentionParams& p, const RowInfo& r, int64_t pos0,
                                                     int quad) {
  // Rows past the block's last (query, head) are never written out: skip them too (they would
  // otherwise walk the whole loop on every tile, and their lanes hold up the warp).
  if (!r.real || (pos0 + kTile <= r.open_end && pos0 >= r.first)) return 0;
  uint32_t hidden = 0;
#pragma unroll 1
  for (int i = 0; i < 16; ++i)
    if (!row_sees(p, r, pos0 + (i / 2) * 8 + 2 * quad + (i % 2))) hidden |= 1u << i;
  return hidden;
}

// State of a warp's two rows per thread: max and sum per row, the output fragment [DTILES][4]
// (elements 0-1 row g, 2-3 row g + 8).
template <int DTILES>
struct RowState {
  float m[2], l[2], o[DTILES][4];
  // Max and sum only: for a kernel whose first P V overwrites o (wgmma with accumulate = 0).
  __device__ void reset_max_and_sum() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[h] = -INFINITY;
      l[h] = 0.0f;
    }
  }
  __device__ void reset() {
    reset_max_and_sum();
#pragma unroll
    for (int d = 0; d < DTILES; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[d][e] = 0.0f;
  }
};

// Rows g and g + 8 (local indices of the kernel's row block) of the (query, group head) rows of
// the tile starting at query `first`.
__device__ __forceinline__ RowInfo row_info(const PagedAttentionParams& p, const FlashLayout& f, int64_t first,
                                            int kv_head, int row0, int rows, int local) {
  RowInfo r;
  if (local >= rows) return r;
  r.real = true;
  const int row = row0 + local;
  r.t = first + row / f.group;
  r.head = kv_head * f.group + row % f.group;
  r.entry = entry_of(p, r.t, kv_head);
  r.len = p.kv_len[r.entry];
  r.mask_from = p.mask ? p.mask_start[r.entry] : r.len;
  r.open_end = min(r.len, r.mask_from);
  r.first = window_first(p, r.entry, r.t, r.len);
  r.mask_row = p.mask ? p.mask + r.t * p.mask_words : nullptr;
  return r;
}

// The KV slot of position pos, or -1 from `longest` on. 32-bit arithmetic: a context and a pool's
// slot count fit (the model runner refuses larger pools), and a 64-bit division is a long inline
// sequence.
__device__ __forceinline__ int32_t slot_of(const PagedAttentionParams& p, const int32_t* table, int64_t longest,
                                           int64_t pos) {
  if (pos >= longest) return -1;
  const uint32_t at = static_cast<uint32_t>(pos), size = static_cast<uint32_t>(p.block_size);
  const uint32_t page = at / size;
  return table[page] * static_cast<int32_t>(size) + static_cast<int32_t>(at - page * size);
}

// Stages kTile K or V rows (slots[r]: row r's slot, -1: zeros) into swizzled shared memory with
// THREADS threads. 32-bit offsets but for the slot's: the index math is most of a loader's code.
template <typename T, int HEAD_DIM, int THREADS>
__device__ __forceinline__ void stage_kv_rows(T* dst, const void* cache, const PagedAttentionParams& p, int kv_head,
                                              const int32_t* slots) {
  constexpr int C = kChunks<HEAD_DIM>, kRowsPerTrip = THREADS / C;
  static_assert(kTile % kRowsPerTrip == 0, "whole trips");
  const int c = threadIdx.x % C, r0 = threadIdx.x / C;
  const int row_elems = static_cast<int>(p.num_kv_heads) * HEAD_DIM;
  const T* head_row = static_cast<const T*>(cache) + kv_head * HEAD_DIM + c * 8;
#pragma unroll 8
  for (int trip = 0; trip < kTile / kRowsPerTrip; ++trip) {
    const int r = r0 + trip * kRowsPerTrip;
    const int32_t slot = slots[r];
    const bool valid = slot >= 0;
    cp_async16(dst + swizzled<HEAD_DIM>(r, c), head_row + static_cast<int64_t>(valid ? slot : 0) * row_elems, valid);
  }
}

// Stages ROWS rows of K and V (slots[r]: row r's slot, -1: zeros) into shared memory laid out by
// Layout, with THREADS threads. A row's slot and offset are read and computed once for both
// caches; 32-bit offsets but for the slot's: the index math is most of a loader's code.
template <typename T, int HEAD_DIM, int THREADS, typename Layout = LdmatrixLayout<HEAD_DIM>, int ROWS = kTile>
__device__ __forceinline__ void stage_kv_tile(T* k_dst, T* v_dst, const PagedAttentionParams& p, int kv_head,
                                              const int32_t* slots) {
  constexpr int C = kChunks<HEAD_DIM>, kRowsPerTrip = THREADS / C;
  static_assert(ROWS % kRowsPerTrip == 0, "whole trips");
  const int c = threadIdx.x % C, r0 = threadIdx.x / C;
  const int row_elems = static_cast<int>(p.num_kv_heads) * HEAD_DIM;
  const int64_t head_offset = kv_head * HEAD_DIM + c * 8;
  const T* k_row = static_cast<const T*>(p.k_cache) + head_offset;
  const T* v_row = static_cast<const T*>(p.v_cache) + head_offset;
#pragma unroll 8
  for (int trip = 0; trip < ROWS / kRowsPerTrip; ++trip) {
    const int r = r0 + trip * kRowsPerTrip;
    const int32_t slot = slots[r];
    const bool valid = slot >= 0;
    const int64_t offset = static_cast<int64_t>(valid ? slot : 0) * row_elems;
    const int at = Layout::offset(r, c);
    cp_async16(k_dst + at, k_row + offset, valid);
    cp_async16(v_dst + at, v_row + offset, valid);
  }
}

// Stages the query rows [row0, row0 + rows) of a tile (ROWS buffer rows, zeros past `rows`).
template <typename T, int HEAD_DIM, int ROWS, int THREADS, typename Layout = LdmatrixLayout<HEAD_DIM>>
__device__ __forceinline__ void stage_q_rows(T* dst, const PagedAttentionParams& p, const FlashLayout& f,
                                             int64_t first, int kv_head, int row0, int rows) {
  constexpr int C = kChunks<HEAD_DIM>;
  static_assert(ROWS * C % THREADS == 0, "whole trips");
  const T* q = static_cast<const T*>(p.q);
#pragma unroll 1
  for (int trip = 0; trip < ROWS * C / THREADS; ++trip) {
    const int idx = threadIdx.x + trip * THREADS;
    const int r = idx / C, c = idx % C;
    const bool valid = r < rows;
    int64_t offset = 0;
    if (valid) {
      const int row = row0 + r;
      const int64_t t = first + row / f.group, head = kv_head * f.group + row % f.group;
      offset = (t * p.num_heads + head) * HEAD_DIM + c * 8;
    }
    cp_async16(dst + Layout::offset(r, c), q + offset, valid);
  }
}

// One warp's share of a tile's math. kb / vb: the tile's 64 K / V rows, swizzled.
//
// The warp's query rows as m16n8k16 A fragments, one per 16-wide k step: a[0] = row g, k 2q..2q+1;
// a[1] = row g + 8; a[2], a[3] the same rows at k + 8 (g = lane / 4, q = lane % 4).
template <int HEAD_DIM>
using QFragments = uint32_t[HEAD_DIM / 16][4];

// From a staged buffer (rows 0-15, swizzled).
template <int HEAD_DIM>
__device__ __forceinline__ void q_fragment(const void* q_rows, int ks, uint32_t (&a)[4]) {
  const int lane = threadIdx.x % 32;
  ldmatrix_x4(a, static_cast<const uint16_t*>(q_rows) + swizzled<HEAD_DIM>(lane % 16, 2 * ks + lane / 16));
}

// score[n][e] = q . k for positions n * 8 + 2 * quad + (e & 1), row g (e < 2) or g + 8. QA(ks, a)
// yields the A fragment of k step ks.
template <typename T, int HEAD_DIM, typename QA>
__device__ __forceinline__ void tile_scores(QA&& q_a, const T* kb, float (&score)[8][4]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) score[n][e] = 0.0f;
#pragma unroll
  for (int ks = 0; ks < HEAD_DIM / 16; ++ks) {
    uint32_t a[4];
    q_a(ks, a);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      uint32_t kf[4];
      ldmatrix_x4(kf, kb + swizzled<HEAD_DIM>(16 * j + (lane / 16) * 8 + lane % 8, 2 * ks + (lane / 8) % 2));
      mma<T>(score[2 * j], a, kf[0], kf[1]);
      mma<T>(score[2 * j + 1], a, kf[2], kf[3]);
    }
  }
}

// The online softmax over the tile at pos0: masks the scores, updates the rows' max and sum,
// rescales the running output, and leaves the tile's weights in score.
//
// Maxes live in the log2 domain (raw score * scale * log2(e)): a weight is one fused multiply-add
// and one ex2 (exp2_ftz), not a multiply, a subtract and expf's range fix-up. The tile's max is
// taken over the raw scores and scaled once: rounding is monotone and the scale positive
// (flash_attention_supports checks it), so that is the max of the scaled scores.
//
// In two parts, so a kernel can compute one tile's weights while the tensor cores still add the
// previous tile's P V into the output: tile_weights (masks, max, weights, sum; corr: the factor
// the output must be rescaled by) and rescale_output.
// may_hide = false: the caller knows every row sees the whole tile (no mask to look up).
template <int DTILES>
__device__ __forceinline__ void tile_weights(const PagedAttentionParams& p, const RowInfo (&row)[2], int64_t pos0,
                                             float (&score)[8][4], RowState<DTILES>& s, float (&corr)[2],
                                             bool may_hide = true) {
  const int quad = threadIdx.x % 4;
  const float scale_log2 = __fmul_rn(p.scale, kLog2e);
  // The thread's two rows go through each stage together: their chains are independent, and a
  // warp that runs them one after the other waits on every step's latency twice.
#pragma unroll
  for (int h = 0; h < 2 && may_hide; ++h) {
    const uint32_t hidden = hidden_positions(p, row[h], pos0, quad);
    if (hidden != 0) {  // tiles on a causal diagonal or a tree's mask; all others see everything
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (hidden >> (2 * n + e) & 1u) score[n][2 * h + e] = -INFINITY;
    }
  }
  // The max as a tree (a max is exact: any order gives the same value).
  float big[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float m[8];
#pragma unroll
    for (int n = 0; n < 8; ++n) m[n] = fmaxf(score[n][2 * h], score[n][2 * h + 1]);
#pragma unroll
    for (int width = 4; width >= 1; width /= 2)
#pragma unroll
      for (int n = 0; n < width; ++n) m[n] = fmaxf(m[n], m[n + width]);
    big[h] = m[0];
  }
#pragma unroll
  for (int lanes = 1; lanes <= 2; lanes *= 2)
#pragma unroll
    for (int h = 0; h < 2; ++h) big[h] = fmaxf(big[h], __shfl_xor_sync(0xffffffffu, big[h], lanes));
  float m_new[2], base[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    m_new[h] = fmaxf(s.m[h], __fmul_rn(big[h], scale_log2));
    corr[h] = s.m[h] == m_new[h] ? 1.0f : exp2_ftz(__fsub_rn(s.m[h], m_new[h]));
    base[h] = m_new[h] == -INFINITY ? 0.0f : m_new[h];
  }
  // A row's sum adds its weights in column order (the order every kernel uses).
#pragma unroll
  for (int n = 0; n < 8; ++n)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float& v = score[n][2 * h + e];
        v = exp2_ftz(fmaf(v, scale_log2, -base[h]));
        sum[h] = __fadd_rn(sum[h], v);
      }
#pragma unroll
  for (int lanes = 1; lanes <= 2; lanes *= 2)
#pragma unroll
    for (int h = 0; h < 2; ++h) sum[h] = __fadd_rn(sum[h], __shfl_xor_sync(0xffffffffu, sum[h], lanes));
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    s.l[h] = fmaf(s.l[h], corr[h], sum[h]);
    s.m[h] = m_new[h];
  }
}

// Once a row's max settles its output needs no rescale (x * 1 is x: the same bits either way).
template <int DTILES>
__device__ __forceinline__ void rescale_output(RowState<DTILES>& s, const float (&corr)[2]) {
  if (__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) {
#pragma unroll
    for (int d = 0; d < DTILES; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) s.o[d][e] = __fmul_rn(s.o[d][e], corr[e / 2]);
  }
}

template <int DTILES>
__device__ __forceinline__ void tile_softmax(const PagedAttentionParams& p, const RowInfo (&row)[2], int64_t pos0,
                                             float (&score)[8][4], RowState<DTILES>& s) {
  float corr[2];
  tile_weights(p, row, pos0, score, s, corr);
  rescale_output(s, corr);
}

// P of positions [16 j, 16 j + 16) (the weights, rounded to T) as an m16n8k16 A fragment, straight
// from the score fragment: the A operand of P V for mma.sync and for wgmma alike.
template <typename T>
__device__ __forceinline__ void weights_fragment(const float (&score)[8][4], int j, uint32_t (&a)[4]) {
  a[0] = pack2<T>(score[2 * j][0], score[2 * j][1]);
  a[1] = pack2<T>(score[2 * j][2], score[2 * j][3]);
  a[2] = pack2<T>(score[2 * j + 1][0], score[2 * j + 1][1]);
  a[3] = pack2<T>(score[2 * j + 1][2], score[2 * j + 1][3]);
}

// out += P V: P (the weights, rounded to T) is the A operand straight from the score fragment.
template <typename T, int HEAD_DIM>
__device__ __forceinline__ void tile_accumulate(const float (&score)[8][4], const T* vb,
                                                RowState<HEAD_DIM / 8>& s) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    uint32_t a[4];
    weights_fragment<T>(score, j, a);
#pragma unroll
    for (int d = 0; d < HEAD_DIM / 16; ++d) {
      uint32_t vf[4];
      ldmatrix_x4_trans(vf, vb + swizzled<HEAD_DIM>(16 * j + ((lane / 8) % 2) * 8 + lane % 8, 2 * d + lane / 16));
      mma<T>(s.o[2 * d], a, vf[0], vf[1]);
      mma<T>(s.o[2 * d + 1], a, vf[2], vf[3]);
    }
  }
}

// A thread's share of the fused block's folded output: rows g and g + 8 (h = 0, 1) of its warp's
// m16 tile, columns d * 8 + 2 * quad + {0, 1}; float2 slots XOR-swizzled by g so the 8 rows of a
// store fall in different banks. Only the owning thread touches its slots (no barrier needed).
//
// Slot (4 d + quad) ^ 4 s with s = g % 4 (masked to the row) is 4 ((d % 4) ^ s) + quad + 16 (d / 4):
// the XOR permutes within aligned groups of four, so a thread keeps one address per d % 4 and the
// rest (rows g + 8, d / 4) are immediate offsets.
template <int HEAD_DIM>
struct TotalOut {
  static constexpr int kGroups = HEAD_DIM / 8 < 4 ? HEAD_DIM / 8 : 4;
  float2* group[kGroups];
  __device__ TotalOut(float* base, int warp, int g, int quad) {
    const int s = (g & 3) & ((HEAD_DIM / 2 - 1) >> 2);
    float2* row = reinterpret_cast<float2*>(base) + (warp * 16 + g) * (HEAD_DIM / 2) + quad;
#pragma unroll
    for (int j = 0; j < kGroups; ++j) group[j] = row + 4 * (j ^ s);
  }
  __device__ float2& at(int h, int d) const { return group[d % kGroups][8 * h * (HEAD_DIM / 2) + 16 * (d / 4)]; }
  __device__ void zero() const {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int d = 0; d < HEAD_DIM / 8; ++d) at(h, d) = make_float2(0.0f, 0.0f);
  }
};

// Fused mode: the split just walked (s) folded into the running result (max and sum in registers,
// the output in shared memory). A split that saw nothing is skipped, as the merge skips it.
template <int HEAD_DIM>
__device__ __forceinline__ void fold_into_total(const RowState<HEAD_DIM / 8>& s, float (&total_m)[2],
                                                float (&total_l)[2], const TotalOut<HEAD_DIM>& total) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (s.m[h] == -INFINITY) continue;
    float fa, fb;
    fold(total_m[h], total_l[h], s.m[h], s.l[h], fa, fb);
#pragma unroll
    for (int d = 0; d < HEAD_DIM / 8; ++d) {
      float2& o = total.at(h, d);
      o = make_float2(fold_out(o.x, fa, s.o[d][2 * h], fb), fold_out(o.y, fa, s.o[d][2 * h + 1], fb));
    }
  }
}

// Fused mode's end: the thread's two rows of the folded result (and the sink), normalised, to p.out.
template <typename T, int HEAD_DIM>
__device__ __forceinline__ void write_total(const PagedAttentionParams& p, const RowInfo (&row)[2],
                                            const float (&total_m)[2], const float (&total_l)[2],
                                            const TotalOut<HEAD_DIM>& total) {
  using P = typename Pair<T>::type;
  const int quad = threadIdx.x % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (!row[h].real) continue;  // a row that sees nothing gets zeros, as in split mode
    T* out = static_cast<T*>(p.out) + (row[h].t * p.num_heads + row[h].head) * HEAD_DIM;
    float L = total_l[h];
    const float a = fold_sink<T>(p, row[h].head, total_m[h], L);
#pragma unroll
    for (int d = 0; d < HEAD_DIM / 8; ++d) {
      const float2 o = total.at(h, d);
      const float lo = finish(__fmul_rn(o.x, a), L), hi = finish(__fmul_rn(o.y, a), L);
      const uint32_t packed = pack2<T>(lo, hi);
      *reinterpret_cast<P*>(out + d * 8 + 2 * quad) = *reinterpret_cast<const P*>(&packed);
    }
  }
}

// The longest visible length of a block's rows [row0, row0 + rows) (it bounds the tiles the block
// stages); WARPS warps, `scratch` one slot a warp in shared memory. Ends with a block barrier.
template <int WARPS>
__device__ __forceinline__ int64_t block_longest(const PagedAttentionParams& p, const FlashLayout& f, int64_t first,
                                                 int kv_head, int row0, int rows, int64_t* scratch) {
  int64_t len = 0;
  if (static_cast<int>(threadIdx.x) < rows)
    len = p.kv_len[entry_of(p, first + (row0 + static_cast<int>(threadIdx.x)) / f.group, kv_head)];
  for (int offset = 16; offset > 0; offset /= 2) len = max(len, __shfl_xor_sync(0xffffffffu, len, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = len;
  __syncthreads();
  int64_t longest = 0;
  for (int w = 0; w < WARPS; ++w) longest = max(longest, scratch[w]);
  return longest;
}

// The earliest position any of a block's rows [row0, row0 + rows) sees (window_first; 0 without a
// window): tiles before it are all hidden, and skipping them leaves every row's bits as they are
// (a hidden tile adds exactly nothing). As block_longest; ends with a block barrier.
template <int WARPS>
__device__ __forceinline__ int64_t block_window_start(const PagedAttentionParams& p, const FlashLayout& f,
                                                      int64_t first, int kv_head, int row0, int rows,
                                                      int64_t* scratch) {
  int64_t start = INT64_MAX;
  if (static_cast<int>(threadIdx.x) < rows) {
    const int64_t t = first + (row0 + static_cast<int>(threadIdx.x)) / f.group, entry = entry_of(p, t, kv_head);
    start = window_first(p, entry, t, p.kv_len[entry]);
  }
  for (int offset = 16; offset > 0; offset /= 2) start = min(start, __shfl_xor_sync(0xffffffffu, start, offset));
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = start;
  __syncthreads();
  for (int w = 0; w < WARPS; ++w) start = min(start, scratch[w]);
  return start == INT64_MAX ? 0 : start;
}

// Split mode: the split's partial of the warp's rows into the workspace (merged by
// flash_merge_kernel).
template <int HEAD_DIM>
__device__ __forceinline__ void write_partial(const PagedAttentionParams& p, const FlashLayout& f,
                                              const RowInfo (&row)[2], int64_t split,
                                              const RowState<HEAD_DIM / 8>& s) {
  const int quad = threadIdx.x % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (row[h].len == 0) continue;
    float* part = partial_of(p, f, row[h].t, row[h].head, split, HEAD_DIM);
    if (quad == 0) {
      part[0] = s.m[h];
      part[1] = s.l[h];
    }
#pragma unroll
    for (int d = 0; d < HEAD_DIM / 8; ++d)
      *reinterpret_cast<float2*>(part + 2 + d * 8 + 2 * quad) = make_float2(s.o[d][2 * h], s.o[d][2 * h + 1]);
  }
}

// The shared-memory opt-in is per device and per kernel: set on the first launch on each device.
// (A template on the kernel itself: its type alone would let the kernels of one signature share
// the flag.)
template <auto Kernel>
void opt_in_shared_memory(int64_t bytes) {
  static std::mutex mutex;
  static uint64_t opted_in = 0;  // one bit per device ordinal
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(mutex);
  if (!(opted_in >> (device % 64) & 1u) &&
      cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)) == cudaSuccess)
    opted_in |= uint64_t{1} << (device % 64);
}

// fn(tag, HeadDim<D>{}) for p's storage (tag: dispatch_storage's, its ::type the element type) and
// head_dim (16, 32, 64 or 128): the launchers' one switch.
template <int D>
using HeadDim = std::integral_constant<int, D>;
template <typename Fn>
void dispatch_head_dim(const PagedAttentionParams& p, Fn&& fn) {
  dispatch_storage(p.storage, [&](auto tag) {
    switch (p.head_dim) {
      case 16: fn(tag, HeadDim<16>{}); break;
      case 32: fn(tag, HeadDim<32>{}); break;
      case 64: fn(tag, HeadDim<64>{}); break;
      default: fn(tag, HeadDim<128>{}); break;
    }
  });
}

// flash_decode.cu: split mode for tiles of at most kDecodeRows (query, head) rows (decode, short
// chains), one warp per (tile, kv head, splits) with its own K/V ring; writes the partials that
// flash_merge_kernel folds. f.row_blocks counts blocks of kDecodeRows rows.
constexpr int kDecodeRows = 16;
void flash_decode_split(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream);

// flash_prefill_wgmma.cu: fused mode at head_dim 128 on the warpgroup MMA (64-row blocks, the same
// f and the same bits as flash_attention_kernel's). False (nothing launched) where it cannot run:
// not an sm_90 device, a build without sm_90a code, or DRIFT_CUDA_WGMMA_ATTENTION=0.
bool flash_prefill_wgmma_available();
bool flash_prefill_wgmma(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream);
// flash_prefill_wgmma_wide.cu: the same for tiles of 128 rows and more (prefill), on 128-row blocks
// of two warpgroups sharing 128-position K/V tiles. f as flash_prefill_wgmma's (64-row blocks).
bool flash_prefill_wgmma_wide(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream);

}  // namespace drift::cuda::flash
