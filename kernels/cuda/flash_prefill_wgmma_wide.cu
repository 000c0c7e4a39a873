// Fused-mode attention at head_dim 128 for prefill on Hopper (sm_90a): 128-row blocks of two
// warpgroups that share each staged K/V tile, a tile being one whole split (128 positions).
//
// A block owns one query tile, one kv head and 128 (query, group head) rows; warpgroup w computes
// rows [64 w, 64 w + 64) with wgmma. Both read the same K/V tiles, staged by all 256 threads with
// cp.async into a ring of three stages, so a staged row serves twice the rows of the 64-row kernel
// (flash_prefill_wgmma.cu) and each thread issues half its copies. mbarriers, not block barriers,
// order the ring: a stage is computed on once every thread's copies landed (full) and restaged
// once every warp released it (empty). The warpgroups take turns to issue their scores (named
// barriers, FlashAttention-3's ping-pong): left alone they ran in lockstep, both computing
// weights while the tensor cores idled; in turns one's weights overlap the other's matrix
// products. Per tile a warpgroup issues the scores of both 64-position halves
// (S = Q K^T, 8 m64n64k16 steps each, Q and K from shared memory) as two groups, then runs the
// halves in order: the weights of half 0 (while the tensor cores compute half 1's scores),
// O += P0 V0 (4 m64n128k16 steps, P0 from registers), the weights of half 1 (while P0 V0 runs),
// the rescale if half 1 raised a row's max, O += P1 V1. The split's output is folded into the
// running result in registers (the 64-row kernel folds through 32 KB of shared memory).
//
// Batch invariance: each row goes through exactly the per-64-position steps of the other kernels
// (flash_common.cuh's tile_weights / rescale_output, P V over the same k steps in the same order,
// the fold at every 128 positions), so a prefilled row has the bits of the same query decoded
// alone (CudaAttentionTest.PrefillRowsEqualTheSameQueriesDecodedAlone).
#include "kernels/cuda/flash_common.cuh"
#include "kernels/cuda/mbarrier.cuh"
#include "kernels/cuda/named_barrier.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace drift::cuda::flash {
namespace {

constexpr int kHeadDim = 128;
constexpr int kGroupRows = 64;  // a warpgroup's m64
constexpr int kWarpgroups = 2;
constexpr int kRows = kWarpgroups * kGroupRows;  // (query, head) rows per block
constexpr int kThreads = kWarpgroups * 128;
constexpr int kWarps = kThreads / 32;
constexpr int kSpan = kFlashSplit;  // positions per staged tile: one split
static_assert(kSpan == 2 * kTile, "a staged tile is two softmax tiles");

// Shared memory, byte offsets (the swizzled tiles 1024-aligned): Q, then kStages K tiles and
// kStages V tiles, the slot ring, the barriers.
constexpr int kStages = 3;
constexpr int kSlotTiles = 4;  // the slot ring: tiles i .. i + 3
constexpr int kQBytes = kRows * kHeadDim * 2;
constexpr int kSpanBytes = kSpan * kHeadDim * 2;
constexpr int kQAt = 0;
constexpr int kKAt = kQAt + kQBytes;
constexpr int kVAt = kKAt + kStages * kSpanBytes;
constexpr int kSlotsAt = kVAt + kStages * kSpanBytes;
constexpr int kBarriersAt = kSlotsAt + kSlotTiles * kSpan * 4;  // full[kStages], empty[kStages]
constexpr int kLongestAt = kBarriersAt + 2 * kStages * 8;
constexpr int kSmemBytes = kLongestAt + kWarps * 8;
static_assert(kSmemBytes <= 227 * 1024, "one block an SM");

// The 128-byte swizzle's 8-row atoms are 1024 bytes apart in every tile.
constexpr uint32_t kGroupBytes = 8 * 128;
// Column-block (64 dimensions) strides: a warpgroup's 64 query rows, a tile's 128 positions.
constexpr uint32_t kQBlockBytes = kGroupRows * 128;
constexpr uint32_t kSpanBlockBytes = kSpan * 128;

// The query rows: warpgroup w's 64 rows are their own swizzled tile at w * kQBlockBytes * 2.
struct QueryLayout {
  __device__ static int offset(int r, int c) {
    return (r / kGroupRows) * kGroupRows * kHeadDim + Swizzle128Layout<kGroupRows>::offset(r % kGroupRows, c);
  }
};
using SpanLayout = Swizzle128Layout<kSpan>;

__device__ __forceinline__ uint64_t k_major(uint32_t start) { return wgmma::descriptor(start, 16, kGroupBytes); }
__device__ __forceinline__ uint64_t n_major(uint32_t start) {
  return wgmma::descriptor(start, kSpanBlockBytes, kGroupBytes);
}
// A K-major tile from k step ks (its 16 dimensions) on; BLOCK: its column-block stride.
template <uint32_t BLOCK>
__device__ __forceinline__ uint64_t k_step(uint64_t tile, int ks) {
  return tile + (((ks / 4) * BLOCK + (ks % 4) * 32) >> 4);
}
// The V tile from position step j (its 16 positions) on.
__device__ __forceinline__ uint64_t position_step(uint64_t tile, int j) { return tile + ((j * 2 * kGroupBytes) >> 4); }

// The running result of a thread's two rows (o[d][e]: as RowState's), folded split by split.
struct FoldedRows {
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  float o[kHeadDim / 8][4] = {};

  // The split just walked (s) folded in: the same arithmetic as fold_into_total's.
  __device__ __forceinline__ void fold_in(const RowState<kHeadDim / 8>& s) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (s.m[h] == -INFINITY) continue;
      float fa, fb;
      fold(m[h], l[h], s.m[h], s.l[h], fa, fb);
#pragma unroll
      for (int d = 0; d < kHeadDim / 8; ++d)
#pragma unroll
        for (int e = 0; e < 2; ++e) o[d][2 * h + e] = fold_out(o[d][2 * h + e], fa, s.o[d][2 * h + e], fb);
    }
  }

  // Normalised, to p.out (as write_total).
  template <typename T>
  __device__ __forceinline__ void write(const PagedAttentionParams& p, const RowInfo (&row)[2]) const {
    using P = typename Pair<T>::type;
    const int quad = threadIdx.x % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!row[h].real) continue;
      T* out = static_cast<T*>(p.out) + (row[h].t * p.num_heads + row[h].head) * kHeadDim;
#pragma unroll
      for (int d = 0; d < kHeadDim / 8; ++d) {
        const uint32_t packed = pack2<T>(finish(o[d][2 * h], l[h]), finish(o[d][2 * h + 1], l[h]));
        *reinterpret_cast<P*>(out + d * 8 + 2 * quad) = *reinterpret_cast<const P*>(&packed);
      }
    }
  }
};

// O += P V over positions [64 half, 64 half + 64) of the V tile, P from the half's weights. The
// first half overwrites O instead (accumulate = 0 on its first k step): a tile is a whole split,
// so O starts each tile at zero, and writing the zeros (then rescaling them) was a sixth of the
// loop's instructions. Only a zero's sign could differ from adding to +0, and an output of
// exactly zero needs every visible value of its column to be zero.
template <typename T>
__device__ __forceinline__ void accumulate_half(const float (&weights)[8][4], uint64_t v_tile, int half,
                                                RowState<kHeadDim / 8>& s) {
  uint32_t a[4][4];
#pragma unroll
  for (int j = 0; j < 4; ++j) weights_fragment<T>(weights, j, a[j]);
  wgmma::pin(s.o);
  wgmma::fence();
#pragma unroll
  for (int j = 0; j < 4; ++j)
    wgmma::m64n128k16_rs_tn<T>(s.o, a[j], position_step(v_tile, 4 * half + j), half > 0 || j > 0);
  wgmma::commit();
}

// The rows' scores of positions [64 half, 64 half + 64) of the K tile: S = Q K^T, issued (one
// commit group; the caller waits).
template <typename T>
__device__ __forceinline__ void issue_scores(float (&score)[8][4], uint64_t q_desc, uint64_t k_tile, int half) {
  wgmma::fence();
  const uint64_t k_half = k_tile + ((half * kTile * 128) >> 4);  // its first K row
  // The first k step overwrites the accumulator (zeroing it first would be register writes
  // ptxas orders after the other half's wgmma in flight).
#pragma unroll
  for (int ks = 0; ks < kHeadDim / 16; ++ks)
    wgmma::m64n64k16_ss<T>(score, k_step<kQBlockBytes>(q_desc, ks), k_step<kSpanBlockBytes>(k_half, ks), ks > 0);
  wgmma::commit();
}

// The first position some real row of the warp does not see (past its context, or where its mask
// starts): tiles before it need no mask lookup. 32-bit: a context fits, and registers are scarce.
__device__ __forceinline__ int32_t warp_visible_end(const RowInfo (&row)[2]) {
  int64_t end = INT32_MAX;
#pragma unroll
  for (int h = 0; h < 2; ++h)
    if (row[h].real) end = min(end, row[h].open_end);
  int32_t end32 = static_cast<int32_t>(end);
  for (int lanes = 16; lanes > 0; lanes /= 2) end32 = min(end32, __shfl_xor_sync(0xffffffffu, end32, lanes));
  return end32;
}

template <typename T>
__global__ void __launch_bounds__(kThreads, 1) flash_prefill_wgmma_wide_kernel(PagedAttentionParams p, FlashLayout f) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) uint8_t smem[];
  if (smem_address(smem) % 1024 != 0) __trap();  // the swizzle atoms would be misread
  T* const q_s = reinterpret_cast<T*>(smem + kQAt);
  T* const k_s = reinterpret_cast<T*>(smem + kKAt);
  T* const v_s = reinterpret_cast<T*>(smem + kVAt);
  auto* const slot_ring = reinterpret_cast<int32_t(*)[kSpan]>(smem + kSlotsAt);
  uint64_t* const full = reinterpret_cast<uint64_t*>(smem + kBarriersAt);  // a stage's tile staged
  uint64_t* const empty = full + kStages;                                  // a stage's tile read
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, group = warp / 4;
  const int g = lane / 4;

  // The longest tiles (the last ones of a prefill) start first.
  const int64_t tile_index = p.num_tiles - 1 - blockIdx.x;
  const int64_t first = p.tiles[tile_index * 2], count = p.tiles[tile_index * 2 + 1];
  const int kv_head = static_cast<int>(blockIdx.y) / f.row_blocks;
  const int row0 = (static_cast<int>(blockIdx.y) % f.row_blocks) * kRows;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kRows), count * f.group - row0));
  if (rows <= 0) return;
  const bool busy = group * kGroupRows < rows;  // the warpgroup has rows (uniform in it)

  const int64_t seq = p.token_seq[first];
  const int64_t longest =
      block_longest<kWarps>(p, f, first, kv_head, row0, rows, reinterpret_cast<int64_t*>(smem + kLongestAt));
  const int64_t list = p.tables_per_seq > 1 ? kv_head : 0;
  const int32_t* table = p.block_tables + (seq * p.tables_per_seq + list) * p.table_stride;
  const int local = warp * 16 + g;  // the thread's first row in the block
  const RowInfo row[2] = {row_info(p, f, first, kv_head, row0, rows, local),
                          row_info(p, f, first, kv_head, row0, rows, local + 8)};
  const int32_t visible_end = warp_visible_end(row);

  // 32-bit tile indices: a context's tiles fit, and the loop's registers are scarce.
  const int tile_end = static_cast<int>((longest + kSpan - 1) / kSpan);
  // Tile t goes to stage t % kStages; its slots are read from the ring's row t % kSlotTiles.
  auto stage_tile = [&](int t) {
    const int stage = t % kStages;
    stage_kv_tile<T, kHeadDim, kThreads, SpanLayout, kSpan>(
        k_s + stage * kSpan * kHeadDim, v_s + stage * kSpan * kHeadDim, p, kv_head, slot_ring[t % kSlotTiles]);
  };
  // This thread's copies of tile t landed: made visible to the tensor cores, then counted.
  auto tile_staged = [&](int t) {
    wgmma::fence_shared_writes();
    mbarrier::arrive(&full[t % kStages]);
  };
  auto slot_at = [&](int t) { return slot_of(p, table, longest, int64_t{t} * kSpan + threadIdx.x); };

  if (threadIdx.x < kSpan)
    for (int t = 0; t < kSlotTiles - 1; ++t) slot_ring[t][threadIdx.x] = slot_at(t);
  if (threadIdx.x < kStages) {
    mbarrier::init(&full[threadIdx.x], kThreads);
    mbarrier::init(&empty[threadIdx.x], kWarps);
  }
  __syncthreads();
  stage_q_rows<T, kHeadDim, kRows, kThreads, QueryLayout>(q_s, p, f, first, kv_head, row0, rows);
  stage_tile(0);
  cp_async_commit();
  if (tile_end > 1) stage_tile(1);
  cp_async_commit();
  cp_async_wait<1>();
  tile_staged(0);

  RowState<kHeadDim / 8> s;  // the current split
  s.reset_max_and_sum();
  FoldedRows total;
  const uint64_t q_desc = k_major(smem_address(q_s + group * kGroupRows * kHeadDim));

  // After computing tile i each thread stages tile i + 2 into the stage tile i - 1 had: only once
  // every warp released it (empty; by then the other warpgroup, at most a turn behind, has), and
  // a stage is computed on only once every thread's copies landed (full). Staging before the math
  // instead made each warpgroup wait for the other to finish tile i - 1, so the turns collapsed
  // back into lockstep.
  auto restage = [&](int tile) {
    if (tile + 2 < tile_end) {
      if (tile >= 1) mbarrier::wait(&empty[(tile + 2) % kStages], static_cast<uint32_t>((tile - 1) / kStages) & 1u);
      stage_tile(tile + 2);
    }
    cp_async_commit();
    cp_async_wait<1>();
    if (tile + 1 < tile_end) tile_staged(tile + 1);
  };
  const bool pingpong = rows > kGroupRows;  // both warpgroups compute (block-uniform)
  constexpr uint32_t kTurn = 1;  // named barrier kTurn + w: warpgroup w's turn to issue its scores
  if (pingpong && group == 1) named_barrier::arrive(kTurn, kThreads);  // warpgroup 0 goes first
  for (int tile = 0; tile < tile_end; ++tile) {
    const int stage = tile % kStages;
    // Tile i + 3's slots, read now and written to the ring after the math (the load's latency
    // hides behind it).
    const int32_t later_slot = threadIdx.x < kSpan && tile + 3 < tile_end ? slot_at(tile + 3) : -1;
    mbarrier::wait(&full[stage], static_cast<uint32_t>(tile / kStages) & 1u);

    if (busy) {
      const uint64_t k_tile = k_major(smem_address(k_s + stage * kSpan * kHeadDim));
      const uint64_t v_tile = n_major(smem_address(v_s + stage * kSpan * kHeadDim));
      const int64_t pos0 = int64_t{tile} * kSpan;
      const bool second = pos0 + kTile < longest;  // the second half has positions to see
      // Both halves' scores are issued at once (unconditionally: ptxas serialises every wgmma of
      // a loop whose groups it cannot count); the first half's softmax runs while the tensor cores
      // compute the second's.
      float score[2][8][4];
      if (pingpong) named_barrier::sync(kTurn + group, kThreads);
      issue_scores<T>(score[0], q_desc, k_tile, 0);
      issue_scores<T>(score[1], q_desc, k_tile, 1);
      if (pingpong) named_barrier::arrive(kTurn + 1 - group, kThreads);
      wgmma::wait<1>();
      wgmma::pin(score[0]);

      float corr[2];  // half 0: O is not yet written (accumulate_half), so nothing to rescale
      tile_weights(p, row, pos0, score[0], s, corr, pos0 + kTile > visible_end);
      accumulate_half<T>(score[0], v_tile, 0, s);
      wgmma::wait<1>();  // the second half's scores (P0 V0 may still run)
      wgmma::pin(score[1]);
      if (second) {
        tile_weights(p, row, pos0 + kTile, score[1], s, corr, pos0 + 2 * kTile > visible_end);
        wgmma::wait<0>();
        wgmma::pin(s.o);
        rescale_output(s, corr);
        accumulate_half<T>(score[1], v_tile, 1, s);
      }
      wgmma::wait<0>();
      wgmma::pin(s.o);
    }
    if (threadIdx.x < kSpan && tile + 3 < tile_end) slot_ring[(tile + 3) % kSlotTiles][threadIdx.x] = later_slot;
    __syncwarp();
    if (lane == 0) mbarrier::arrive(&empty[stage]);  // the warp is done reading the stage
    restage(tile);
    if (busy) {
      total.fold_in(s);
      s.reset_max_and_sum();
    }
  }
  if (pingpong && group == 0) named_barrier::sync(kTurn, kThreads);  // warpgroup 1's last turn
  cp_async_wait<0>();
  // The rows again (not kept in registers through the loop, which needs only their lengths).
  const RowInfo out_row[2] = {row_info(p, f, first, kv_head, row0, rows, local),
                              row_info(p, f, first, kv_head, row0, rows, local + 8)};
  total.write<T>(p, out_row);
#else
  __trap();  // launched only where flash_prefill_wgmma_available() said yes
#endif
}

}  // namespace

bool flash_prefill_wgmma_wide(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream) {
  if (p.head_dim != kHeadDim || !flash_prefill_wgmma_available()) return false;
  FlashLayout wide = f;  // f counts 64-row blocks
  const int64_t tile_rows = f.row_blocks * int64_t{64};
  wide.row_blocks = static_cast<int32_t>((tile_rows + kRows - 1) / kRows);
  const dim3 grid(static_cast<unsigned>(p.num_tiles), static_cast<unsigned>(p.num_kv_heads * wide.row_blocks));
  dispatch_storage(p.storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    opt_in_shared_memory<flash_prefill_wgmma_wide_kernel<T>>(kSmemBytes);
    flash_prefill_wgmma_wide_kernel<T><<<grid, kThreads, kSmemBytes, stream>>>(p, wide);
  });
  return true;
}

}  // namespace drift::cuda::flash
