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
#include "kernels/cuda/flash_common.cuh"

namespace drift::cuda {
namespace {

using namespace flash;

constexpr int kWarps = 4;
constexpr int kRows = kWarps * 16;  // (query, head) rows per block

template <typename T, int HEAD_DIM>
struct FlashBlock {
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
  int64_t first = 0, longest = 0;
  int kv_head = 0, row0 = 0, rows = 0;  // 32-bit: they index heads and rows
  const int32_t* table = nullptr;

  // Stages positions [tile * kTile, +kTile) of K and V into buffer `buf` (slots: the tile's).
  __device__ void load_tile(int buf, const int32_t* slots) {
    stage_kv_tile<T, HEAD_DIM, kWarps * 32>(k_s + buf * kTile * HEAD_DIM, v_s + buf * kTile * HEAD_DIM, p, kv_head,
                                            slots);
  }
  __device__ void load_q() { stage_q_rows<T, HEAD_DIM, kRows, kWarps * 32>(q_s, p, f, first, kv_head, row0, rows); }
  __device__ RowInfo row_info(int local) const { return flash::row_info(p, f, first, kv_head, row0, rows, local); }
  __device__ int32_t slot_of(int64_t pos) const { return flash::slot_of(p, table, longest, pos); }
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
  b.kv_head = static_cast<int>(blockIdx.y) / f.row_blocks;
  b.row0 = (static_cast<int>(blockIdx.y) % f.row_blocks) * kRows;
  b.rows = static_cast<int>(min(static_cast<int64_t>(kRows), count * f.group - b.row0));
  if (b.rows <= 0) return;

  // The tile's sequence (its page table) is loaded in the same trip to memory as the rows' lengths:
  // at one decode query per block the prologue's dependent loads are most of the block's time.
  const int64_t seq = p.token_seq[b.first];
  // The block's longest visible length bounds the tiles it stages; in a windowed layer the
  // earliest position its rows see is where they start.
  __shared__ int64_t longest_s[kWarps], start_s[kWarps];
  b.longest = block_longest<kWarps>(p, f, b.first, b.kv_head, b.row0, b.rows, longest_s);
  const int64_t seen_from =
      p.window > 0 ? block_window_start<kWarps>(p, f, b.first, b.kv_head, b.row0, b.rows, start_s) : 0;

  const int64_t splits = (b.longest + kFlashSplit - 1) / kFlashSplit;
  const int64_t split_begin = FUSED ? 0 : blockIdx.z * f.splits_per_block;
  if (!FUSED && split_begin >= splits) return;  // the merge writes rows that see nothing
  const int64_t split_end = FUSED ? splits : min(split_begin + f.splits_per_block, splits);
  // Splits wholly behind the window: the merge starts each row at its window's split.
  if (!FUSED && split_end * kFlashSplit <= seen_from) return;
  const int64_t list = p.tables_per_seq > 1 ? b.kv_head : 0;
  b.table = p.block_tables + (seq * p.tables_per_seq + list) * p.table_stride;

  const RowInfo row[2] = {b.row_info(warp * 16 + g), b.row_info(warp * 16 + g + 8)};
  const bool warp_busy = warp * 16 < b.rows;

  constexpr int64_t kTilesPerSplit = kFlashSplit / kTile;
  const int64_t tile_begin = max(split_begin * kTilesPerSplit, seen_from / kTile);
  const int64_t tile_end = (min(split_end * kFlashSplit, b.longest) + kTile - 1) / kTile;

  // Slots of the next tiles, a ring of three: tile i's in slot_ring[i % 3] (relative to tile_begin).
  __shared__ int32_t slot_ring[3][kTile];
  if (threadIdx.x < kTile) {
    slot_ring[0][threadIdx.x] = b.slot_of(tile_begin * kTile + threadIdx.x);
    slot_ring[1][threadIdx.x] = b.slot_of((tile_begin + 1) * kTile + threadIdx.x);
  }
  __syncthreads();
  b.load_q();
  b.load_tile(0, slot_ring[0]);
  cp_async_commit();

  RowState<DTILES> s;  // the current split
  s.reset();
  // Fused: the splits folded so far, max and sum in registers, the output in shared memory.
  float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0.0f, 0.0f};
  TotalOut<HEAD_DIM> total{reinterpret_cast<float*>(b.v_s + 2 * kTile * HEAD_DIM), warp, g, quad};
  if constexpr (FUSED) total.zero();

  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    const int i = static_cast<int>(tile - tile_begin), buf = i & 1;
    // Tile + 2's slots: the page-table load is in flight while this tile computes.
    const int32_t later_slot =
        threadIdx.x < kTile && tile + 2 < tile_end ? b.slot_of((tile + 2) * kTile + threadIdx.x) : -1;
    if (tile + 1 < tile_end) {
      b.load_tile(buf ^ 1, slot_ring[(i + 1) % 3]);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    if (warp_busy) {
      const T* kb = b.k_s + buf * kTile * HEAD_DIM;
      const T* vb = b.v_s + buf * kTile * HEAD_DIM;
      float score[8][4];
      const T* q_rows = b.q_s + warp * 16 * HEAD_DIM;
      tile_scores<T, HEAD_DIM>([&](int ks, uint32_t(&a)[4]) { q_fragment<HEAD_DIM>(q_rows, ks, a); }, kb, score);
      tile_softmax(p, row, tile * kTile, score, s);
      tile_accumulate<T, HEAD_DIM>(score, vb, s);

      // A split ends: fold it (fused) or write it out (split mode).
      if ((tile + 1) % kTilesPerSplit == 0 || tile + 1 == tile_end) {
        const int64_t split = tile / kTilesPerSplit;
        if constexpr (FUSED) {
          fold_into_total(s, total_m, total_l, total);
        } else {
          write_partial<HEAD_DIM>(p, f, row, split, s);
        }
        s.reset();
      }
    }
    if (threadIdx.x < kTile) slot_ring[(i + 2) % 3][threadIdx.x] = later_slot;
    __syncthreads();  // the buffer just read is the next prefetch's target
  }
  cp_async_wait<0>();  // a fused block that sees nothing still staged its first tile

  if constexpr (FUSED) {
    if (warp_busy) write_total<T, HEAD_DIM>(p, row, total_m, total_l, total);
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
  const int d = threadIdx.x;
  auto stage_chunk = [&](int64_t c0, int64_t splits, int buf) {
    const int n = static_cast<int>(min(static_cast<int64_t>(kMergeChunk), splits - c0));
    const float* src = partial_of(p, f, t, head, c0, HEAD_DIM);
    for (int i = threadIdx.x; i < n * kStride / 2; i += blockDim.x) cp_async8(sm.stage[buf] + 2 * i, src + 2 * i);
    cp_async_commit();
  };
  // The first chunk is staged as far as any row's splits reach, in the same trip to memory as this
  // row's length (splits past the row's own are staged but never folded). In a windowed layer the
  // row starts at its window's split (the splits before saw nothing, and were not written).
  const int64_t entry = entry_of(p, t, static_cast<int>(head) / f.group);
  const int64_t len = p.kv_len[entry];
  const int64_t first_split = p.window > 0 ? window_first(p, entry, t, len) / kFlashSplit : 0;
  stage_chunk(first_split, f.max_splits, 0);
  const int64_t splits = (len + kFlashSplit - 1) / kFlashSplit;
  if (threadIdx.x == 0) sm.carry = -INFINITY;
  float L = 0.0f, o = 0.0f;
  for (int64_t c0 = first_split, chunk = 0; c0 < splits; c0 += kMergeChunk, ++chunk) {
    const int buf = static_cast<int>(chunk & 1);
    const int n = static_cast<int>(min(static_cast<int64_t>(kMergeChunk), splits - c0));
    if (c0 + kMergeChunk < splits) {
      stage_chunk(c0 + kMergeChunk, splits, buf ^ 1);  // its buffer was folded before the last barrier
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
  cp_async_wait<0>();  // a row that sees nothing still staged the first chunk
  __syncthreads();     // the last chunk's carry (the row's max) is written
  const float a = fold_sink<T>(p, head, sm.carry, L);
  if (d < HEAD_DIM)
    static_cast<T*>(p.out)[(t * p.num_heads + head) * HEAD_DIM + d] = from_float<T>(finish(__fmul_rn(o, a), L));
}

// Over long contexts a split-mode block walks several consecutive splits (its setup's trips to
// memory are paid once), as long as one query tile alone still fills `slots` resident blocks:
// tiles beyond the first may be a recorded graph's padding (they exit at once), so they are not
// counted on. per_tile: blocks per (tile, split).
int64_t splits_per_block(int64_t max_splits, int64_t per_tile, int64_t slots) {
  const int64_t wanted_split_blocks = (slots + per_tile - 1) / per_tile;
  int64_t n = 1;
  while (n < 16 && max_splits / (2 * n) >= wanted_split_blocks) n *= 2;
  return n;
}

template <typename T, int HEAD_DIM>
void launch(const PagedAttentionParams& p, cudaStream_t stream) {
  using Block = FlashBlock<T, HEAD_DIM>;
  FlashLayout f;
  f.group = static_cast<int32_t>(p.num_heads / p.num_kv_heads);
  const int64_t tile_queries = p.max_tile_queries > 0 ? p.max_tile_queries : kAttentionTileQueries;
  f.row_blocks = static_cast<int32_t>((tile_queries * f.group + kRows - 1) / kRows);
  f.max_splits = (p.max_kv_len + kFlashSplit - 1) / kFlashSplit;
  // Split mode when the fused grid would leave the GPU idle and the partials fit; the bits are
  // the same either way. Over a short context (kShortSplits at most: 512 positions, where it was
  // measured) a fused block's walk is short, and 1.5 blocks an SM already beat splitting plus the
  // merge (decode at 512, H100: B64 9.16 -> 8.85 ms, B32 7.47 -> 7.42, within noise; B8, 64
  // blocks, stays split: 5.95 against 6.29 fused).
  constexpr int64_t kShortSplits = 4;
  const int64_t fused_blocks = p.num_tiles * p.num_kv_heads * f.row_blocks;
  const int64_t partial_bytes = p.tokens * p.num_heads * f.max_splits * (HEAD_DIM + 2) * int64_t{4};
  const bool enough_blocks = fused_blocks >= 4 * multiprocessors() ||
                             (f.max_splits <= kShortSplits && 2 * fused_blocks >= 3 * multiprocessors());
  const bool fused = f.max_splits == 1 || enough_blocks || partial_bytes > p.workspace_bytes || !p.workspace ||
                     f.max_splits > 65535;  // grid.z's limit (before splits_per_block)
  const dim3 grid(static_cast<unsigned>(p.num_tiles), static_cast<unsigned>(p.num_kv_heads * f.row_blocks));
  if (fused) {
    // The warpgroup kernels compute all 64 rows of a warpgroup: worth it when tiles fill them
    // (prefill: the 128-row kernel; trees of 16-31 nodes at GQA 4: the 64-row one), not for
    // decode's few rows a tile (the mma.sync kernel skips empty warps). The bits are the same
    // either way.
    // Sinks and windows (GPT-OSS, head_dim 64) run on the mma.sync kernel only.
    const bool plain = !p.sinks && p.window == 0;
    if (plain && tile_queries * f.group >= 2 * kRows && flash_prefill_wgmma_wide(p, f, stream)) return;
    if (plain && tile_queries * f.group >= kRows && flash_prefill_wgmma(p, f, stream)) return;
    opt_in_shared_memory<flash_attention_kernel<T, HEAD_DIM, true>>(Block::kFusedSmemBytes);
    flash_attention_kernel<T, HEAD_DIM, true><<<grid, kWarps * 32, Block::kFusedSmemBytes, stream>>>(p, f);
    return;
  }
  // Decode and short chains over many (tile, kv head, split) tasks: one warp per 16 rows, each
  // with its own K/V ring and no block barrier, four to an SM (a 64-row block would leave three of
  // its four warps idle, and two blocks' busy warps share a scheduler). With fewer tasks than
  // warp slots the GPU is idle either way and a task's latency decides: the 64-row block's four
  // warps issue its loads four times faster (B1 decode at 512: 7.8 us against 10.7).
  const bool narrow = tile_queries * f.group <= kDecodeRows;
  if (narrow && p.num_tiles * p.num_kv_heads * f.max_splits >= 4 * multiprocessors()) {
    f.row_blocks = 1;
    f.splits_per_block = splits_per_block(f.max_splits, p.num_kv_heads, 4 * multiprocessors());
    flash_decode_split(p, f, stream);
  } else {
    f.splits_per_block = splits_per_block(f.max_splits, p.num_kv_heads * f.row_blocks, 2 * multiprocessors());
    const int64_t split_blocks = (f.max_splits + f.splits_per_block - 1) / f.splits_per_block;
    opt_in_shared_memory<flash_attention_kernel<T, HEAD_DIM, false>>(Block::kSmemBytes);
    flash_attention_kernel<T, HEAD_DIM, false>
        <<<dim3(grid.x, grid.y, static_cast<unsigned>(split_blocks)), kWarps * 32, Block::kSmemBytes, stream>>>(p, f);
  }
  // More threads than head_dim: the staging loads of a chunk go out in one or two trips.
  constexpr int64_t kMergeSmemBytes = sizeof(MergeSmem<HEAD_DIM>);
  opt_in_shared_memory<flash_merge_kernel<T, HEAD_DIM>>(kMergeSmemBytes);
  flash_merge_kernel<T, HEAD_DIM><<<dim3(static_cast<unsigned>(p.tokens), static_cast<unsigned>(p.num_heads)),
                                    kMergeThreads, kMergeSmemBytes, stream>>>(p, f);
}

}  // namespace

bool flash_attention_supports(const PagedAttentionParams& p) {
  const bool dims = p.head_dim == 16 || p.head_dim == 32 || p.head_dim == 64 || p.head_dim == 128;
  // scale > 0: tile_softmax scales a tile's max instead of every score.
  return dims && p.scale > 0.0f && p.tiles && p.num_tiles > 0 && p.num_kv_heads > 0 &&
         p.num_heads % p.num_kv_heads == 0;
}

bool flash_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (!flash_attention_supports(p)) return false;
  dispatch_head_dim(p, [&](auto tag, auto head_dim) {
    launch<typename decltype(tag)::type, decltype(head_dim)::value>(p, stream);
  });
  return true;
}

}  // namespace drift::cuda
