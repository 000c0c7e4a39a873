// Split-mode tensor-core attention for tiles of at most 16 (query, head) rows: decode tokens (one
// query, a GQA group of up to 16 heads) and short verification chains. One warp owns a tile's
// rows for one kv head and walks a run of consecutive splits, writing each split's partial for
// flash_merge_kernel (flash_attention.cu), exactly as a split-mode block of the 64-row kernel
// does: the same per-tile functions (flash_common.cuh), the same tiles, the same splits, so a row
// gets the same bits from either kernel.
//
// Why a kernel of its own: a 64-row block at one decode query keeps one busy warp and three idle
// ones beside 64 KB of double-buffered K/V, two blocks to an SM, so both busy warps share one of
// the SM's four schedulers and each tile waits on its own load. Here a warp is alone with its
// rows, four warps (one per scheduler) fit an SM, and the warp's own instruction stream is the
// critical path, so it is kept short:
// - a ring of three 64-row units (K of tile i, V of tile i, K of tile i + 1 in flight while tile
//   i computes; V of tile i + 1 goes out once K of tile i is consumed), cp.async, one commit
//   group per unit, __syncwarp only;
// - the query rows are loaded once, straight into the MMA's A fragments (no staging buffer).
// (Bulk copies were tried for the units: cp.async.bulk takes uniform operands, so 64 rows at 64
// addresses compile to a 64-trip loop, more instructions than the 16-byte copies.)
#include "kernels/cuda/flash_common.cuh"

namespace drift::cuda::flash {
namespace {

constexpr int kUnits = 3;

template <int HEAD_DIM>
struct DecodeSmem {
  static constexpr int64_t kUnitElems = int64_t{kTile} * HEAD_DIM;
  static constexpr int64_t kBytes = kUnits * kUnitElems * 2 + kUnits * kTile * 4;
};

template <typename T, int HEAD_DIM>
__global__ void __launch_bounds__(32) flash_decode_kernel(PagedAttentionParams p, FlashLayout f) {
  extern __shared__ uint4 smem[];
  T* units = reinterpret_cast<T*>(smem);
  int32_t(*slot_ring)[kTile] = reinterpret_cast<int32_t(*)[kTile]>(units + kUnits * DecodeSmem<HEAD_DIM>::kUnitElems);
  auto unit = [&](int u) { return units + u * DecodeSmem<HEAD_DIM>::kUnitElems; };
  const int lane = threadIdx.x, g = lane / 4, quad = lane % 4;

  const int64_t first = p.tiles[blockIdx.x * 2];
  const int64_t count = p.tiles[blockIdx.x * 2 + 1];
  const int kv_head = static_cast<int>(blockIdx.y) / f.row_blocks;
  const int row0 = (static_cast<int>(blockIdx.y) % f.row_blocks) * kDecodeRows;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kDecodeRows), count * f.group - row0));
  if (rows <= 0) return;

  // The sequence (its page table) in the same trip to memory as the rows' lengths.
  const int64_t seq = p.token_seq[first];
  int64_t longest = lane < rows ? p.kv_len[entry_of(p, first + (row0 + lane) / f.group, kv_head)] : 0;
  for (int offset = 16; offset > 0; offset /= 2) longest = max(longest, __shfl_xor_sync(0xffffffffu, longest, offset));
  const int64_t splits = (longest + kFlashSplit - 1) / kFlashSplit;
  const int64_t split_begin = blockIdx.z * f.splits_per_block;
  if (split_begin >= splits) return;  // the merge writes rows that see nothing
  const int64_t split_end = min(split_begin + f.splits_per_block, splits);
  // A windowed layer: the earliest position the rows see (flash_attention_kernel's seen_from).
  int64_t seen_from = 0;
  if (p.window > 0) {
    seen_from = INT64_MAX;
    if (lane < rows) {
      const int64_t t = first + (row0 + lane) / f.group, entry = entry_of(p, t, kv_head);
      seen_from = window_first(p, entry, t, p.kv_len[entry]);
    }
    for (int offset = 16; offset > 0; offset /= 2)
      seen_from = min(seen_from, __shfl_xor_sync(0xffffffffu, seen_from, offset));
    if (split_end * kFlashSplit <= seen_from) return;  // wholly behind the window: never merged
  }
  const int64_t list = p.tables_per_seq > 1 ? kv_head : 0;
  const int32_t* table = p.block_tables + (seq * p.tables_per_seq + list) * p.table_stride;

  const RowInfo row[2] = {row_info(p, f, first, kv_head, row0, rows, g), row_info(p, f, first, kv_head, row0, rows, g + 8)};
  constexpr int64_t kTilesPerSplit = kFlashSplit / kTile;
  const int64_t tile_begin = max(split_begin * kTilesPerSplit, seen_from / kTile);
  const int64_t tile_end = (min(split_end * kFlashSplit, longest) + kTile - 1) / kTile;
  // Tile i's slots (relative to tile_begin) in slot_ring[i % 3], written two tiles ahead; lane l
  // looks up positions l and l + 32 of a tile.
  auto lane_slots = [&](int64_t tile, int32_t(&slot)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) slot[h] = tile < tile_end ? slot_of(p, table, longest, tile * kTile + lane + 32 * h) : -1;
  };
  auto put_slots = [&](int ring, const int32_t(&slot)[2]) {
    slot_ring[ring][lane] = slot[0];
    slot_ring[ring][lane + 32] = slot[1];
  };
  {
    int32_t slot[2];
    lane_slots(tile_begin, slot);
    put_slots(0, slot);
    lane_slots(tile_begin + 1, slot);
    put_slots(1, slot);
  }

  // The query rows as A fragments, straight from global memory (zeros for rows past `rows`).
  QFragments<HEAD_DIM> qf;
  {
    const T* q = static_cast<const T*>(p.q);
    const T* q_row[2] = {q + (row[0].t * p.num_heads + row[0].head) * HEAD_DIM,
                         q + (row[1].t * p.num_heads + row[1].head) * HEAD_DIM};
#pragma unroll
    for (int ks = 0; ks < HEAD_DIM / 16; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int h = i % 2, k = ks * 16 + (i / 2) * 8 + 2 * quad;
        qf[ks][i] = row[h].real ? *reinterpret_cast<const uint32_t*>(q_row[h] + k) : 0u;
      }
  }
  __syncwarp();  // the first slots are staged

  // Loads go out in the order K0 V0 K1 V1 K2 ..., one commit group per unit (empty past the last
  // tile), so "this tile's K (or V) has landed" is always wait_group 2 at the points below.
  stage_kv_rows<T, HEAD_DIM, 32>(unit(0), p.k_cache, p, kv_head, slot_ring[0]);
  cp_async_commit();
  stage_kv_rows<T, HEAD_DIM, 32>(unit(1), p.v_cache, p, kv_head, slot_ring[0]);
  cp_async_commit();
  if (tile_begin + 1 < tile_end) stage_kv_rows<T, HEAD_DIM, 32>(unit(2), p.k_cache, p, kv_head, slot_ring[1]);
  cp_async_commit();

  RowState<HEAD_DIM / 8> s;
  s.reset();
  int k_unit = 0, v_unit = 1, ring = 0;  // this tile's units (the third holds the next K) and slots
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    // Tile + 2's slots: the page-table loads are in flight while this tile computes.
    int32_t later[2];
    lane_slots(tile + 2, later);
    const int next_ring = ring == 2 ? 0 : ring + 1, later_ring = next_ring == 2 ? 0 : next_ring + 1;

    cp_async_wait<2>();  // K of this tile
    __syncwarp();
    float score[8][4];
    tile_scores<T, HEAD_DIM>(
        [&](int ks, uint32_t(&a)[4]) {
#pragma unroll
          for (int i = 0; i < 4; ++i) a[i] = qf[ks][i];
        },
        unit(k_unit), score);
    tile_softmax(p, row, tile * kTile, score, s);
    __syncwarp();  // K's unit is free: V of the next tile goes there
    if (tile + 1 < tile_end) stage_kv_rows<T, HEAD_DIM, 32>(unit(k_unit), p.v_cache, p, kv_head, slot_ring[next_ring]);
    cp_async_commit();

    cp_async_wait<2>();  // V of this tile
    __syncwarp();
    tile_accumulate<T, HEAD_DIM>(score, unit(v_unit), s);
    put_slots(later_ring, later);  // tile - 1's slots are no longer needed (its V went out a tile ago)
    __syncwarp();  // V's unit is free and the slots are staged: K of tile + 2 goes there
    if (tile + 2 < tile_end) stage_kv_rows<T, HEAD_DIM, 32>(unit(v_unit), p.k_cache, p, kv_head, slot_ring[later_ring]);
    cp_async_commit();

    if ((tile + 1) % kTilesPerSplit == 0 || tile + 1 == tile_end) {
      write_partial<HEAD_DIM>(p, f, row, tile / kTilesPerSplit, s);
      s.reset();
    }
    // Next tile: its K is in the third unit (loaded a tile ago), its V where this K was.
    const int next_k = 3 - k_unit - v_unit;
    v_unit = k_unit;
    k_unit = next_k;
    ring = next_ring;
  }
}

template <typename T, int HEAD_DIM>
void launch(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream) {
  constexpr int64_t kBytes = DecodeSmem<HEAD_DIM>::kBytes;
  opt_in_shared_memory<flash_decode_kernel<T, HEAD_DIM>>(kBytes);
  const int64_t split_blocks = (f.max_splits + f.splits_per_block - 1) / f.splits_per_block;
  const dim3 grid(static_cast<unsigned>(p.num_tiles), static_cast<unsigned>(p.num_kv_heads * f.row_blocks),
                  static_cast<unsigned>(split_blocks));
  flash_decode_kernel<T, HEAD_DIM><<<grid, 32, kBytes, stream>>>(p, f);
}

}  // namespace

void flash_decode_split(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream) {
  dispatch_head_dim(p, [&](auto tag, auto head_dim) {
    launch<typename decltype(tag)::type, decltype(head_dim)::value>(p, f, stream);
  });
}

}  // namespace drift::cuda::flash
