// Fused-mode attention at head_dim 128 on Hopper's warpgroup MMA (sm_90a) for tiles of 64 to 127
// rows (trees of 16 to 31 nodes at GQA 4; prefill's 256-row tiles run flash_prefill_wgmma_wide.cu).
//
// The same work split, walk and arithmetic as flash_attention.cu's fused kernel (a block owns one
// query tile, one kv head and 64 (query, group head) rows; 64-position K/V tiles, cp.async
// double-buffered; splits of kFlashSplit folded in order into an fp32 result in shared memory), but
// the block is one warpgroup and its two products per tile are wgmma instructions that read Q, K and
// V straight from shared memory: S = Q K^T as 8 m64n64k16 steps, O += P V as 4 m64n128k16 steps
// with P (the softmax weights, rounded to T) from registers. The mma.sync kernel loads every K and V
// fragment with ldmatrix once per warp and feeds it to one 16-row MMA, so shared-memory bandwidth and
// instruction issue bound it (133 TFLOP/s on the H200); here one operand read serves all 64 rows.
//
// Batch invariance: a row's scores and output are accumulated over the same k steps in the same
// order as the mma.sync kernels' (16 dimensions, then 16 positions, at a time), the softmax and
// folds are flash_common.cuh's, so a prefilled row must have the bits of the same query decoded
// alone; CudaAttentionTest.PrefillRowsEqualTheSameQueriesDecodedAlone checks it on the GPU.
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/flash_common.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace drift::cuda::flash {
namespace {

constexpr int kHeadDim = 128;
constexpr int kRows = 64;  // (query, head) rows per block: one warpgroup's m64
constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;

// Shared memory, byte offsets (the swizzled tiles 1024-aligned; nothing is static so the
// dynamic base is the block's first byte).
constexpr int kQBytes = kRows * kHeadDim * 2;
constexpr int kTileBytes = kTile * kHeadDim * 2;
constexpr int kQAt = 0;
constexpr int kKAt = kQAt + kQBytes;         // 2 buffers
constexpr int kVAt = kKAt + 2 * kTileBytes;  // 2 buffers
constexpr int kTotalAt = kVAt + 2 * kTileBytes;
constexpr int kSlotsAt = kTotalAt + kRows * kHeadDim * 4;
constexpr int kLongestAt = kSlotsAt + 3 * kTile * 4;
constexpr int kSmemBytes = kLongestAt + kWarps * 8;

// A 64-row tile's column block stride, and the stride between 8-row groups.
constexpr uint32_t kBlockBytes = 64 * 128;
constexpr uint32_t kGroupBytes = 8 * 128;

// Descriptors of a whole staged tile (start: its shared address). K-major (Q as A, K as B): 64
// rows of 128 dimensions; N-major (V as B): 64 positions of 128 dimensions.
__device__ __forceinline__ uint64_t k_major(uint32_t start) { return wgmma::descriptor(start, 16, kGroupBytes); }
__device__ __forceinline__ uint64_t n_major(uint32_t start) {
  return wgmma::descriptor(start, kBlockBytes, kGroupBytes);
}
// The same tiles from k step ks (its 16 dimensions) or position step j (its 16 positions): the
// start address field (bytes / 16, the low bits) moves, nothing else.
__device__ __forceinline__ uint64_t k_step(uint64_t tile, int ks) {
  return tile + (((ks / 4) * kBlockBytes + (ks % 4) * 32) >> 4);
}
__device__ __forceinline__ uint64_t position_step(uint64_t tile, int j) { return tile + ((j * 2 * kGroupBytes) >> 4); }

template <typename T>
__global__ void __launch_bounds__(kThreads) flash_prefill_wgmma_kernel(PagedAttentionParams p, FlashLayout f) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) uint8_t smem[];
  if (smem_address(smem) % 1024 != 0) __trap();  // the swizzle atoms would be misread
  T* const q_s = reinterpret_cast<T*>(smem + kQAt);
  T* const k_s = reinterpret_cast<T*>(smem + kKAt);
  T* const v_s = reinterpret_cast<T*>(smem + kVAt);
  auto* const slot_ring = reinterpret_cast<int32_t(*)[kTile]>(smem + kSlotsAt);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, quad = lane % 4;

  // The longest tiles (the last ones of a prefill) start first.
  const int64_t tile_index = p.num_tiles - 1 - blockIdx.x;
  const int64_t first = p.tiles[tile_index * 2], count = p.tiles[tile_index * 2 + 1];
  const int kv_head = static_cast<int>(blockIdx.y) / f.row_blocks;
  const int row0 = (static_cast<int>(blockIdx.y) % f.row_blocks) * kRows;
  const int rows = static_cast<int>(min(static_cast<int64_t>(kRows), count * f.group - row0));
  if (rows <= 0) return;

  const int64_t seq = p.token_seq[first];
  const int64_t longest =
      block_longest<kWarps>(p, f, first, kv_head, row0, rows, reinterpret_cast<int64_t*>(smem + kLongestAt));
  const int64_t list = p.tables_per_seq > 1 ? kv_head : 0;
  const int32_t* table = p.block_tables + (seq * p.tables_per_seq + list) * p.table_stride;
  const RowInfo row[2] = {row_info(p, f, first, kv_head, row0, rows, warp * 16 + g),
                          row_info(p, f, first, kv_head, row0, rows, warp * 16 + g + 8)};

  constexpr int64_t kTilesPerSplit = kFlashSplit / kTile;
  const int64_t tile_end = (longest + kTile - 1) / kTile;
  using KvLayout = Swizzle128Layout<kTile>;
  auto load_tile = [&](int buf, const int32_t* slots) {
    stage_kv_tile<T, kHeadDim, kThreads, KvLayout>(k_s + buf * kTile * kHeadDim, v_s + buf * kTile * kHeadDim, p,
                                                   kv_head, slots);
  };

  if (threadIdx.x < kTile) {
    slot_ring[0][threadIdx.x] = slot_of(p, table, longest, threadIdx.x);
    slot_ring[1][threadIdx.x] = slot_of(p, table, longest, kTile + threadIdx.x);
  }
  __syncthreads();
  stage_q_rows<T, kHeadDim, kRows, kThreads, Swizzle128Layout<kRows>>(q_s, p, f, first, kv_head, row0, rows);
  load_tile(0, slot_ring[0]);
  cp_async_commit();

  RowState<kHeadDim / 8> s;  // the current split
  s.reset();
  float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0.0f, 0.0f};
  const TotalOut<kHeadDim> total{reinterpret_cast<float*>(smem + kTotalAt), warp, g, quad};
  total.zero();
  const uint64_t q_desc = k_major(smem_address(q_s));
  const uint64_t k_desc[2] = {k_major(smem_address(k_s)), k_major(smem_address(k_s + kTile * kHeadDim))};
  const uint64_t v_desc[2] = {n_major(smem_address(v_s)), n_major(smem_address(v_s + kTile * kHeadDim))};

  for (int64_t tile = 0; tile < tile_end; ++tile) {
    const int i = static_cast<int>(tile), buf = i & 1;
    const int32_t later_slot =
        threadIdx.x < kTile && tile + 2 < tile_end ? slot_of(p, table, longest, (tile + 2) * kTile + threadIdx.x) : -1;
    if (tile + 1 < tile_end) {
      load_tile(buf ^ 1, slot_ring[(i + 1) % 3]);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    wgmma::fence_shared_writes();
    __syncthreads();

    const uint64_t k_tile = buf ? k_desc[1] : k_desc[0], v_tile = buf ? v_desc[1] : v_desc[0];
    float score[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) score[n][e] = 0.0f;
    wgmma::pin(score);
    wgmma::fence();
#pragma unroll
    for (int ks = 0; ks < kHeadDim / 16; ++ks) wgmma::m64n64k16_ss<T>(score, k_step(q_desc, ks), k_step(k_tile, ks));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::pin(score);

    tile_softmax(p, row, tile * kTile, score, s);

    uint32_t a[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) weights_fragment<T>(score, j, a[j]);
    wgmma::pin(s.o);
    wgmma::fence();
#pragma unroll
    for (int j = 0; j < 4; ++j) wgmma::m64n128k16_rs_tn<T>(s.o, a[j], position_step(v_tile, j));
    wgmma::commit();
    wgmma::wait<0>();
    wgmma::pin(s.o);

    if ((tile + 1) % kTilesPerSplit == 0 || tile + 1 == tile_end) {
      fold_into_total(s, total_m, total_l, total);
      s.reset();
    }
    if (threadIdx.x < kTile) slot_ring[(i + 2) % 3][threadIdx.x] = later_slot;
    __syncthreads();  // the buffers just read are the next prefetch's target
  }
  cp_async_wait<0>();  // a block that sees nothing still staged its first tile
  write_total<T, kHeadDim>(p, row, total_m, total_l, total);
#else
  __trap();  // launched only where flash_prefill_wgmma_available() said yes
#endif
}

// The device's compute capability, once per device ordinal.
bool device_is_sm90() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major == 9 && minor == 0;
}

}  // namespace

bool flash_prefill_wgmma_available() {
#if DRIFT_CUDA_SM90A
  // DRIFT_CUDA_WGMMA_ATTENTION=0 runs the mma.sync kernel instead (A/B measurements in one binary).
  static const bool enabled = [] {
    const char* env = std::getenv("DRIFT_CUDA_WGMMA_ATTENTION");
    return !(env && std::strcmp(env, "0") == 0);
  }();
  thread_local int device = -1;
  thread_local bool sm90 = false;
  int current = 0;
  if (!enabled || cudaGetDevice(&current) != cudaSuccess) return false;
  if (current != device) {
    device = current;
    sm90 = device_is_sm90();
  }
  return sm90;
#else
  return false;
#endif
}

bool flash_prefill_wgmma(const PagedAttentionParams& p, const FlashLayout& f, cudaStream_t stream) {
  if (p.head_dim != kHeadDim || !flash_prefill_wgmma_available()) return false;
  const dim3 grid(static_cast<unsigned>(p.num_tiles), static_cast<unsigned>(p.num_kv_heads * f.row_blocks));
  dispatch_storage(p.storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    opt_in_shared_memory<flash_prefill_wgmma_kernel<T>>(kSmemBytes);
    flash_prefill_wgmma_kernel<T><<<grid, kThreads, kSmemBytes, stream>>>(p, f);
  });
  return true;
}

}  // namespace drift::cuda::flash
