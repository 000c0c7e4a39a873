// Tensor-core paged attention (head_dim 16, 32, 64, 128): prefill chunks, decode tokens and
// tree-verification nodes of a ragged batch, flash-attention style on m16n8k16 MMAs.
//
// Work split: a block owns one query tile (up to kAttentionTileQueries consecutive queries of one
// sequence), one kv head and 64 of the tile's (query, group head) rows, one m16 tile per warp, so
// each K/V row staged in shared memory serves every query head of the group (GQA). Positions are
// walked in 64-position tiles (cp.async, double-buffered, XOR-swizzled for ldmatrix).
//
// Batch invariance: positions are grouped into splits of kFlashSplit by absolute position. Within
// a split a row runs the online softmax over the split's tiles in order; the splits' partial
// results (max, sum, unnormalised output) are then folded in split order with fold() below.
// Either one block walks every split of its rows and folds in registers (fused: prefill and big
// batches), or one block per split writes its partial and flash_merge_kernel folds them (split:
// few rows over long contexts, flash-decoding). The arithmetic a row gets is the same in both
// modes and does not depend on the other rows of its tile (an MMA's output row depends only on
// its own input row; reductions over positions run in a fixed order within a quad), so a tree
// node verified in a 17-row forward gets the same bits as the same token decoded alone.
#include <mutex>
#include <type_traits>

#include "kernels/cuda/attention_entry.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/mma.cuh"

namespace drift::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kRows = kWarps * 16;  // (query, head) rows per block
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

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; zeros when !valid (rows past the context: no NaN from stale pages).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(p)));
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  using P = typename Pair<T>::type;
  P v;
  if constexpr (std::is_same_v<T, __half>)
    v = __floats2half2_rn(lo, hi);
  else
    v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// One split's partial folded into the running result: the single definition both modes use, with
// explicit roundings (no contraction can differ between the call sites). A split that saw nothing
// (m_c = -inf) is skipped by the callers. a, b: the factors of the old and new outputs, which
// depend only on the running max before the split (M) and the split's max (m_c).
__device__ __forceinline__ float fold_factors(float M, float m_c, float& a, float& b) {
  const float m = fmaxf(M, m_c);
  a = M == m ? 1.0f : __expf(__fsub_rn(M, m));
  b = m_c == m ? 1.0f : __expf(__fsub_rn(m_c, m));
  return m;
}
__device__ __forceinline__ float fold_sum(float L, float a, float l_c, float b) { return fmaf(L, a, __fmul_rn(l_c, b)); }
__device__ __forceinline__ void fold(float& M, float& L, float m_c, float l_c, float& a, float& b) {
  M = fold_factors(M, m_c, a, b);
  L = fold_sum(L, a, l_c, b);
}
__device__ __forceinline__ float fold_out(float o, float a, float o_c, float b) { return fmaf(o, a, __fmul_rn(o_c, b)); }
__device__ __forceinline__ float finish(float o, float L) { return L > 0.0f ? __fdiv_rn(o, L) : 0.0f; }

struct FlashLayout {
  int64_t group = 1;       // query heads per kv head
  int64_t row_blocks = 1;  // blocks of kRows rows per (tile, kv head)
  int64_t max_splits = 1;  // split stride of the workspace
  int64_t splits_per_block = 1;  // split mode: consecutive splits a block walks (each written out)
};

// Workspace per (query, head, split): [max, sum, out[HEAD_DIM]].
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
  int64_t open_end = 0;   // min(len, mask_from): positions before it are all visible
  const uint64_t* mask_row = nullptr;
};

__device__ __forceinline__ bool row_sees(const PagedAttentionParams& p, const RowInfo& r, int64_t pos) {
  if (pos < r.open_end) return true;
  if (pos >= r.len) return false;
  const int64_t bit = pos - r.mask_from;
  return bit < p.mask_words * 64 && ((r.mask_row[bit / 64] >> (bit % 64)) & 1u);
}

// A thread's share of the fused block's folded output: rows g and g + 8 (h = 0, 1) of its warp's
// m16 tile, columns d * 8 + 2 * quad + {0, 1}; float2 slots XOR-swizzled by g so the 8 rows of a
// store fall in different banks. Only the owning thread touches its slots (no barrier needed).
template <int HEAD_DIM>
struct TotalOut {
  float* base;
  int warp, g, quad;
  __device__ float2& at(int h, int d) const {
    const int row = warp * 16 + g + 8 * h;
    const int slot = (4 * d + quad) ^ (((g & 3) << 2) & (HEAD_DIM / 2 - 1));
    return reinterpret_cast<float2*>(base)[row * (HEAD_DIM / 2) + slot];
  }
  __device__ void zero() const {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int d = 0; d < HEAD_DIM / 8; ++d) at(h, d) = make_float2(0.0f, 0.0f);
  }
};

template <typename T, int HEAD_DIM>
struct FlashBlock {
  static constexpr int C = kChunks<HEAD_DIM>;
  static constexpr int KSTEPS = HEAD_DIM / 16;  // MMA k steps of q . k
  static constexpr int DTILES = HEAD_DIM / 8;   // n8 tiles of the output
  static constexpr int64_t kSmemBytes = static_cast<int64_t>(kRows + 4 * kTile) * HEAD_DIM * 2;
  // Fused mode also keeps the folded output of its rows in shared memory (fp32): in registers
  // beside the current split's it would spill at head_dim 128.
  static constexpr int64_t kFusedSmemBytes = kSmemBytes + static_cast<int64_t>(kRows) * HEAD_DIM * 4;

  const PagedAttentionParams& p;
  const FlashLayout& f;
  T* q_s;
  T* k_s;  // 2 buffers of kTile rows
  T* v_s;
  int64_t first = 0, kv_head = 0, row0 = 0, rows = 0, longest = 0;
  const int32_t* table = nullptr;

  // The KV page of position pos, or -1 past the block's longest row.
  __device__ int32_t page_of(int64_t pos) const { return pos < longest ? table[pos / p.block_size] : -1; }

  // Stages positions [tile * kTile, +kTile) of K and V into buffer `buf`; pages[r]: position
  // tile * kTile + r's page (staged in shared memory a tile ahead, so no copy waits on the page
  // table; int32 keeps two fused head_dim-128 blocks within an SM's shared memory).
  __device__ void load_tile(int64_t tile, int buf, const int32_t* pages) {
    const T* k_cache = static_cast<const T*>(p.k_cache);
    const T* v_cache = static_cast<const T*>(p.v_cache);
    T* kb = k_s + buf * kTile * HEAD_DIM;
    T* vb = v_s + buf * kTile * HEAD_DIM;
    static_assert(kTile * C % (kWarps * 32) == 0, "whole trips");
#pragma unroll
    for (int trip = 0; trip < kTile * C / (kWarps * 32); ++trip) {
      const int idx = threadIdx.x + trip * kWarps * 32;
      const int r = idx / C, c = idx % C;
      const int32_t page = pages[r];
      const bool valid = page >= 0;
      const int64_t slot = static_cast<int64_t>(page) * p.block_size + (tile * kTile + r) % p.block_size;
      const int64_t offset = valid ? (slot * p.num_kv_heads + kv_head) * HEAD_DIM + c * 8 : 0;
      cp_async16(kb + swizzled<HEAD_DIM>(r, c), k_cache + offset, valid);
      cp_async16(vb + swizzled<HEAD_DIM>(r, c), v_cache + offset, valid);
    }
  }

  __device__ void load_q() {
    const T* q = static_cast<const T*>(p.q);
    static_assert(kRows * C % (kWarps * 32) == 0, "whole trips");
#pragma unroll
    for (int trip = 0; trip < kRows * C / (kWarps * 32); ++trip) {
      const int idx = threadIdx.x + trip * kWarps * 32;
      const int r = idx / C, c = idx % C;
      const bool valid = r < rows;
      int64_t offset = 0;
      if (valid) {
        const int64_t row = row0 + r, t = first + row / f.group, head = kv_head * f.group + row % f.group;
        offset = (t * p.num_heads + head) * HEAD_DIM + c * 8;
      }
      cp_async16(q_s + swizzled<HEAD_DIM>(r, c), q + offset, valid);
    }
  }

  __device__ RowInfo row_info(int local) const {
    RowInfo r;
    if (local >= rows) return r;
    r.real = true;
    const int64_t row = row0 + local;
    r.t = first + row / f.group;
    r.head = kv_head * f.group + row % f.group;
    r.entry = entry_of(p, r.t, kv_head);
    r.len = p.kv_len[r.entry];
    r.mask_from = p.mask ? p.mask_start[r.entry] : r.len;
    r.open_end = min(r.len, r.mask_from);
    r.mask_row = p.mask ? p.mask + r.t * p.mask_words : nullptr;
    return r;
  }
};

// State of a warp's two rows per thread: max and sum per row, the output fragment [DTILES][4]
// (elements 0-1 row g, 2-3 row g + 8).
template <int DTILES>
struct RowState {
  float m[2], l[2], o[DTILES][4];
  __device__ void reset() {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m[h] = -INFINITY;
      l[h] = 0.0f;
    }
#pragma unroll
    for (int d = 0; d < DTILES; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[d][e] = 0.0f;
  }
};

// FUSED: the block walks every split of its rows (else: the split blockIdx.z, written out).
template <typename T, int HEAD_DIM, bool FUSED>
__global__ void __launch_bounds__(kWarps * 32) flash_attention_kernel(PagedAttentionParams p, FlashLayout f) {
  using Block = FlashBlock<T, HEAD_DIM>;
  constexpr int DTILES = Block::DTILES;
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, quad = lane % 4;

  // Fused blocks walk whole contexts: the longest tiles (the last ones of a prefill) start first.
  const int64_t tile_index = FUSED ? p.num_tiles - 1 - blockIdx.x : blockIdx.x;
  Block b{p, f};
  b.q_s = reinterpret_cast<T*>(smem);
  b.k_s = b.q_s + kRows * HEAD_DIM;
  b.v_s = b.k_s + 2 * kTile * HEAD_DIM;
  b.first = p.tiles[tile_index * 2];
  const int64_t count = p.tiles[tile_index * 2 + 1];
  b.kv_head = blockIdx.y / f.row_blocks;
  b.row0 = (blockIdx.y % f.row_blocks) * kRows;
  b.rows = min(static_cast<int64_t>(kRows), count * f.group - b.row0);
  if (b.rows <= 0) return;

  // The tile's sequence (its page table) is loaded in the same trip to memory as the rows' lengths:
  // at one decode query per block the prologue's dependent loads are most of the block's time.
  const int64_t seq = p.token_seq[b.first];
  // The block's longest visible length bounds the tiles it stages.
  __shared__ int64_t longest_s[kWarps];
  {
    int64_t len = 0;
    if (threadIdx.x < b.rows) len = p.kv_len[entry_of(p, b.first + (b.row0 + threadIdx.x) / f.group, b.kv_head)];
    for (int offset = 16; offset > 0; offset /= 2) len = max(len, __shfl_xor_sync(0xffffffffu, len, offset));
    if (lane == 0) longest_s[warp] = len;
    __syncthreads();
    b.longest = 0;
    for (int w = 0; w < kWarps; ++w) b.longest = max(b.longest, longest_s[w]);
  }
  const int64_t splits = (b.longest + kFlashSplit - 1) / kFlashSplit;
  const int64_t split_begin = FUSED ? 0 : blockIdx.z * f.splits_per_block;
  if (!FUSED && split_begin >= splits) return;  // the merge writes rows that see nothing
  const int64_t split_end = FUSED ? splits : min(split_begin + f.splits_per_block, splits);
  const int64_t list = p.tables_per_seq > 1 ? b.kv_head : 0;
  b.table = p.block_tables + (seq * p.tables_per_seq + list) * p.table_stride;

  const RowInfo row[2] = {b.row_info(warp * 16 + g), b.row_info(warp * 16 + g + 8)};
  const bool warp_busy = warp * 16 < b.rows;

  constexpr int64_t kTilesPerSplit = kFlashSplit / kTile;
  const int64_t tile_begin = split_begin * kTilesPerSplit;
  const int64_t tile_end = (min(split_end * kFlashSplit, b.longest) + kTile - 1) / kTile;

  // Pages of the next tiles, a ring of three: tile i's in page_ring[i % 3] (relative to tile_begin).
  __shared__ int32_t page_ring[3][kTile];
  if (threadIdx.x < kTile) {
    page_ring[0][threadIdx.x] = b.page_of(tile_begin * kTile + threadIdx.x);
    page_ring[1][threadIdx.x] = b.page_of((tile_begin + 1) * kTile + threadIdx.x);
  }
  __syncthreads();
  b.load_q();
  b.load_tile(tile_begin, 0, page_ring[0]);
  cp_async_commit();

  RowState<DTILES> s;  // the current split
  s.reset();
  // Fused: the splits folded so far, max and sum in registers, the output in shared memory.
  float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0.0f, 0.0f};
  TotalOut<HEAD_DIM> total{reinterpret_cast<float*>(b.v_s + 2 * kTile * HEAD_DIM), warp, g, quad};
  if constexpr (FUSED) total.zero();
  const float scale = p.scale;

  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    const int i = static_cast<int>(tile - tile_begin), buf = i & 1;
    // Tile + 2's pages: the page-table load is in flight while this tile computes.
    const int32_t later_page =
        threadIdx.x < kTile && tile + 2 < tile_end ? b.page_of((tile + 2) * kTile + threadIdx.x) : -1;
    if (tile + 1 < tile_end) {
      b.load_tile(tile + 1, buf ^ 1, page_ring[(i + 1) % 3]);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    if (warp_busy) {
      const T* kb = b.k_s + buf * kTile * HEAD_DIM;
      const T* vb = b.v_s + buf * kTile * HEAD_DIM;
      // scores[n][e]: positions n * 8 + 2 * quad + (e & 1), row g (e < 2) or g + 8.
      float score[8][4];
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) score[n][e] = 0.0f;
#pragma unroll
      for (int ks = 0; ks < Block::KSTEPS; ++ks) {
        uint32_t a[4];
        ldmatrix_x4(a, b.q_s + swizzled<HEAD_DIM>(warp * 16 + lane % 16, 2 * ks + lane / 16));
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          uint32_t kf[4];
          ldmatrix_x4(kf, kb + swizzled<HEAD_DIM>(16 * j + (lane / 16) * 8 + lane % 8, 2 * ks + (lane / 8) % 2));
          mma<T>(score[2 * j], a, kf[0], kf[1]);
          mma<T>(score[2 * j + 1], a, kf[2], kf[3]);
        }
      }

      const int64_t pos0 = tile * kTile;
      float corr[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const bool open = pos0 + kTile <= row[h].open_end;
        float big = -INFINITY;
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& v = score[n][2 * h + e];
            v = __fmul_rn(v, scale);
            if (!open && !row_sees(p, row[h], pos0 + n * 8 + 2 * quad + e)) v = -INFINITY;
            big = fmaxf(big, v);
          }
        big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, 1));
        big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, 2));
        const float m_new = fmaxf(s.m[h], big);
        corr[h] = s.m[h] == m_new ? 1.0f : __expf(__fsub_rn(s.m[h], m_new));
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& v = score[n][2 * h + e];
            v = __expf(__fsub_rn(v, base));
            sum = __fadd_rn(sum, v);
          }
        sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 1));
        sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, 2));
        s.l[h] = fmaf(s.l[h], corr[h], sum);
        s.m[h] = m_new;
      }
#pragma unroll
      for (int d = 0; d < DTILES; ++d)
#pragma unroll
        for (int e = 0; e < 4; ++e) s.o[d][e] = __fmul_rn(s.o[d][e], corr[e / 2]);
      // out += P V: P (the weights, rounded to T) is the A operand straight from the score fragment.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t a[4] = {pack2<T>(score[2 * j][0], score[2 * j][1]), pack2<T>(score[2 * j][2], score[2 * j][3]),
                               pack2<T>(score[2 * j + 1][0], score[2 * j + 1][1]),
                               pack2<T>(score[2 * j + 1][2], score[2 * j + 1][3])};
#pragma unroll
        for (int d = 0; d < DTILES / 2; ++d) {
          uint32_t vf[4];
          ldmatrix_x4_trans(vf, vb + swizzled<HEAD_DIM>(16 * j + ((lane / 8) % 2) * 8 + lane % 8, 2 * d + lane / 16));
          mma<T>(s.o[2 * d], a, vf[0], vf[1]);
          mma<T>(s.o[2 * d + 1], a, vf[2], vf[3]);
        }
      }

      // A split ends: fold it (fused) or write it out (split mode).
      if ((tile + 1) % kTilesPerSplit == 0 || tile + 1 == tile_end) {
        const int64_t split = tile / kTilesPerSplit;
        if constexpr (FUSED) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (s.m[h] == -INFINITY) continue;
            float fa, fb;
            fold(total_m[h], total_l[h], s.m[h], s.l[h], fa, fb);
#pragma unroll
            for (int d = 0; d < DTILES; ++d) {
              float2& o = total.at(h, d);
              o = make_float2(fold_out(o.x, fa, s.o[d][2 * h], fb), fold_out(o.y, fa, s.o[d][2 * h + 1], fb));
            }
          }
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            if (row[h].len == 0) continue;
            float* part = partial_of(p, f, row[h].t, row[h].head, split, HEAD_DIM);
            if (quad == 0) {
              part[0] = s.m[h];
              part[1] = s.l[h];
            }
#pragma unroll
            for (int d = 0; d < DTILES; ++d)
              *reinterpret_cast<float2*>(part + 2 + d * 8 + 2 * quad) = make_float2(s.o[d][2 * h], s.o[d][2 * h + 1]);
          }
        }
        s.reset();
      }
    }
    if (threadIdx.x < kTile) page_ring[(i + 2) % 3][threadIdx.x] = later_page;
    __syncthreads();  // the buffer just read is the next prefetch's target
  }
  cp_async_wait<0>();  // a fused block that sees nothing still staged its first tile

  if constexpr (FUSED) {
    if (!warp_busy) return;
    using P = typename Pair<T>::type;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!row[h].real) continue;  // a row that sees nothing gets zeros, as in split mode
      T* out = static_cast<T*>(p.out) + (row[h].t * p.num_heads + row[h].head) * HEAD_DIM;
#pragma unroll
      for (int d = 0; d < DTILES; ++d) {
        const float2 o = total.at(h, d);
        const float lo = finish(o.x, total_l[h]), hi = finish(o.y, total_l[h]);
        const uint32_t packed = pack2<T>(lo, hi);
        *reinterpret_cast<P*>(out + d * 8 + 2 * quad) = *reinterpret_cast<const P*>(&packed);
      }
    }
  }
}

// Split mode's second pass: folds a (query, head)'s splits in split order, with exactly the fused
// blocks' arithmetic. A 32K context has 256 splits, so the pass must not wait on memory or on the
// fold's own latency once per split:
// - partials stream through shared memory in chunks of kMergeChunk (cp.async, double-buffered:
//   the next chunk's copy runs while this one folds);
// - a split's factors (a, b of fold()) depend only on the running max before and after it, a
//   prefix max, which one warp computes for the whole chunk at once (max is exact in any order);
// - the per-dimension folds are then a plain chain of fmaf over smem operands, with no branch
//   (a split that saw nothing is skipped by a select, as the fused fold skips it).
constexpr int kMergeChunk = 64;
constexpr int kMergeThreads = 256;  // >= every head_dim (the folding threads)

__device__ __forceinline__ void cp_async8(void* dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_address(dst)), "l"(src));
}

template <int HEAD_DIM>
struct MergeSmem {
  static constexpr int kStride = HEAD_DIM + 2;  // a split's [max, sum, out[HEAD_DIM]] (even: 8-byte aligned)
  float stage[2][kMergeChunk * kStride];
  float a[kMergeChunk], b[kMergeChunk];
  bool skip[kMergeChunk];
  float carry;  // the running max after the previous chunk
};

// Factors of splits [0, n) of the staged chunk (one warp, two splits a lane): M before split i is
// the max of the carry and the maxes of splits < i.
template <int HEAD_DIM>
__device__ void merge_factors(MergeSmem<HEAD_DIM>& sm, const float* chunk, int n) {
  constexpr int kStride = MergeSmem<HEAD_DIM>::kStride;
  const int lane = threadIdx.x;
  const int i0 = 2 * lane, i1 = 2 * lane + 1;
  const float m0 = i0 < n ? chunk[i0 * kStride] : -INFINITY;
  const float m1 = i1 < n ? chunk[i1 * kStride] : -INFINITY;
  float inclusive = fmaxf(m0, m1);  // -> max of the pairs of lanes <= lane (inclusive scan)
  for (int offset = 1; offset < 32; offset *= 2) {
    const float other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive = fmaxf(inclusive, other);
  }
  const float lower_lanes = __shfl_up_sync(0xffffffffu, inclusive, 1);
  const float carry = sm.carry;
  const float M0 = lane == 0 ? carry : fmaxf(carry, lower_lanes);  // before split i0
  auto factors = [&](int i, float M, float m_c) {
    if (i >= n) return;
    sm.skip[i] = m_c == -INFINITY;
    fold_factors(M, m_c, sm.a[i], sm.b[i]);
  };
  factors(i0, M0, m0);
  factors(i1, fmaxf(M0, m0), m1);
  const float total = __shfl_sync(0xffffffffu, fmaxf(carry, inclusive), 31);
  __syncwarp();
  if (lane == 0) sm.carry = total;
}

template <typename T, int HEAD_DIM>
__global__ void __launch_bounds__(kMergeThreads) flash_merge_kernel(PagedAttentionParams p, FlashLayout f) {
  using Smem = MergeSmem<HEAD_DIM>;
  constexpr int kStride = Smem::kStride;
  extern __shared__ uint4 merge_smem[];
  Smem& sm = *reinterpret_cast<Smem*>(merge_smem);
  const int64_t t = blockIdx.x, head = blockIdx.y;
  const int64_t len = p.kv_len[entry_of(p, t, head / f.group)];
  const int64_t splits = (len + kFlashSplit - 1) / kFlashSplit;
  const int d = threadIdx.x;
  auto stage_chunk = [&](int64_t c0, int buf) {
    const int n = static_cast<int>(min(static_cast<int64_t>(kMergeChunk), splits - c0));
    const float* src = partial_of(p, f, t, head, c0, HEAD_DIM);
    for (int i = threadIdx.x; i < n * kStride / 2; i += blockDim.x) cp_async8(sm.stage[buf] + 2 * i, src + 2 * i);
    cp_async_commit();
  };
  if (threadIdx.x == 0) sm.carry = -INFINITY;
  if (splits > 0) stage_chunk(0, 0);
  float L = 0.0f, o = 0.0f;
  for (int64_t c0 = 0, chunk = 0; c0 < splits; c0 += kMergeChunk, ++chunk) {
    const int buf = static_cast<int>(chunk & 1);
    const int n = static_cast<int>(min(static_cast<int64_t>(kMergeChunk), splits - c0));
    if (c0 + kMergeChunk < splits) {
      stage_chunk(c0 + kMergeChunk, buf ^ 1);  // its buffer was folded before the last barrier
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // the chunk is staged
    if (threadIdx.x < 32) merge_factors<HEAD_DIM>(sm, sm.stage[buf], n);
    __syncthreads();  // its factors are ready
    if (d < HEAD_DIM) {
      const float* part = sm.stage[buf];
#pragma unroll 8
      for (int c = 0; c < n; ++c, part += kStride) {
        const float fa = sm.a[c], fb = sm.b[c];
        const float L_new = fold_sum(L, fa, part[1], fb);
        const float o_new = fold_out(o, fa, part[2 + d], fb);
        const bool skip = sm.skip[c];
        L = skip ? L : L_new;
        o = skip ? o : o_new;
      }
    }
    __syncthreads();  // the buffer is free for the copy after next, the factors for the next chunk
  }
  if (d < HEAD_DIM) static_cast<T*>(p.out)[(t * p.num_heads + head) * HEAD_DIM + d] = from_float<T>(finish(o, L));
}

int multiprocessors() {
  static const int count = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 1;
  }();
  return count;
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

template <typename T, int HEAD_DIM>
void launch(const PagedAttentionParams& p, cudaStream_t stream) {
  using Block = FlashBlock<T, HEAD_DIM>;
  FlashLayout f;
  f.group = p.num_heads / p.num_kv_heads;
  const int64_t tile_queries = p.max_tile_queries > 0 ? p.max_tile_queries : kAttentionTileQueries;
  f.row_blocks = (tile_queries * f.group + kRows - 1) / kRows;
  f.max_splits = (p.max_kv_len + kFlashSplit - 1) / kFlashSplit;
  // Split mode when the fused grid would leave the GPU idle and the partials fit; the bits are
  // the same either way.
  const int64_t fused_blocks = p.num_tiles * p.num_kv_heads * f.row_blocks;
  const int64_t partial_bytes = p.tokens * p.num_heads * f.max_splits * (HEAD_DIM + 2) * int64_t{4};
  const bool fused = f.max_splits == 1 || fused_blocks >= 4 * multiprocessors() || partial_bytes > p.workspace_bytes ||
            !p.workspace || f.max_splits > 65535;  // grid.z's limit (before splits_per_block)
  // Over long contexts a split-mode block walks several splits (its setup's trips to memory are
  // paid once), as long as one query tile alone would still fill two blocks per SM: tiles beyond
  // the first may be a recorded graph's padding (they exit at once), so they are not counted on.
  const int64_t per_tile = p.num_kv_heads * f.row_blocks;
  const int64_t wanted_split_blocks = (2 * multiprocessors() + per_tile - 1) / per_tile;
  while (f.splits_per_block < 16 && f.max_splits / (2 * f.splits_per_block) >= wanted_split_blocks)
    f.splits_per_block *= 2;
  const int64_t split_blocks = (f.max_splits + f.splits_per_block - 1) / f.splits_per_block;
  const dim3 grid(static_cast<unsigned>(p.num_tiles), static_cast<unsigned>(p.num_kv_heads * f.row_blocks),
                  static_cast<unsigned>(fused ? 1 : split_blocks));
  if (fused) {
    opt_in_shared_memory<flash_attention_kernel<T, HEAD_DIM, true>>(Block::kFusedSmemBytes);
    flash_attention_kernel<T, HEAD_DIM, true><<<grid, kWarps * 32, Block::kFusedSmemBytes, stream>>>(p, f);
    return;
  }
  opt_in_shared_memory<flash_attention_kernel<T, HEAD_DIM, false>>(Block::kSmemBytes);
  flash_attention_kernel<T, HEAD_DIM, false><<<grid, kWarps * 32, Block::kSmemBytes, stream>>>(p, f);
  // More threads than head_dim: the staging loads of a chunk go out in one or two trips.
  constexpr int64_t kMergeSmemBytes = sizeof(MergeSmem<HEAD_DIM>);
  opt_in_shared_memory<flash_merge_kernel<T, HEAD_DIM>>(kMergeSmemBytes);
  flash_merge_kernel<T, HEAD_DIM><<<dim3(static_cast<unsigned>(p.tokens), static_cast<unsigned>(p.num_heads)),
                                    kMergeThreads, kMergeSmemBytes, stream>>>(p, f);
}

}  // namespace

bool flash_attention_supports(const PagedAttentionParams& p) {
  const bool dims = p.head_dim == 16 || p.head_dim == 32 || p.head_dim == 64 || p.head_dim == 128;
  return dims && p.tiles && p.num_tiles > 0 && p.num_kv_heads > 0 && p.num_heads % p.num_kv_heads == 0;
}

bool flash_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (!flash_attention_supports(p)) return false;
  dispatch_storage(p.storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (p.head_dim) {
      case 16: launch<T, 16>(p, stream); break;
      case 32: launch<T, 32>(p, stream); break;
      case 64: launch<T, 64>(p, stream); break;
      default: launch<T, 128>(p, stream); break;
    }
  });
  return true;
}

}  // namespace drift::cuda
