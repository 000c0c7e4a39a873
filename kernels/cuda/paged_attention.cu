// Paged attention for a ragged batch: prefill chunks, decode tokens and tree-verification nodes
// in one launch, each query with its own sequence, visible length and optional tree mask.
//
// Work split (flash-decoding): block (query, kv head, chunk) covers the positions
// [chunk * kAttentionChunk, (chunk + 1) * kAttentionChunk) of the query's sequence, for all the
// query heads that share the kv head (GQA: each K/V row is read once per kv head). Warp w of the
// block takes positions w, w + 4, ... of the chunk with an online softmax, lanes splitting
// head_dim; the warps merge in shared memory and the block writes its partial (max, sum,
// unnormalised output). A second kernel merges the chunks in order.
//
// Batch invariance: chunks are fixed by absolute position and every reduction runs in a fixed
// order over the visible positions, so a query's output depends only on what it sees: a tree
// node verified in a 17-row forward gets the same bits as the same token decoded alone later.
#include "kernels/cuda/attention_entry.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/flash_attention.h"
#include "kernels/cuda/ops.h"

namespace drift::cuda {
namespace {

// Warps per block: each walks every kWarps-th position of the chunk (a serial chain of online-
// softmax updates), so more warps shorten the chain; head_dim 256 keeps 4 for shared memory.
template <int HEAD_DIM>
constexpr int kWarpsFor = HEAD_DIM >= 256 ? 4 : 8;
constexpr int kMaxGroup = 8;  // query heads per block; larger GQA groups span several blocks
constexpr int kUnroll = 4;    // positions whose K/V loads a warp issues before using them

template <int PER_LANE>
struct LaneVec;
template <>
struct LaneVec<1> {
  using T = uint16_t;
};
template <>
struct LaneVec<2> {
  using T = uint32_t;
};
template <>
struct LaneVec<4> {
  using T = uint2;
};
template <>
struct LaneVec<8> {
  using T = uint4;
};

template <typename T, int PER_LANE>
__device__ __forceinline__ void unpack(const typename LaneVec<PER_LANE>::T& raw, float* out) {
  if constexpr (PER_LANE == 1) {
    out[0] = to_float(*reinterpret_cast<const T*>(&raw));
    return;
  }
  using P = typename Pair<T>::type;
  const P* pairs = reinterpret_cast<const P*>(&raw);
#pragma unroll
  for (int i = 0; i < PER_LANE / 2; ++i) {
    const float2 f = to_float2(pairs[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ bool visible(const PagedAttentionParams& p, int64_t entry, int64_t t, int64_t pos) {
  if (!p.mask || pos < p.mask_start[entry]) return true;
  const int64_t bit = pos - p.mask_start[entry];
  if (bit >= p.mask_words * 64) return false;
  return (p.mask[t * p.mask_words + bit / 64] >> (bit % 64)) & 1u;
}

// The sliding window of a query (kernels/cpu/paged_attention.cpp's rule): positions before
// masked_from are their own; a masked (tree) position that is visible sits at masked_from + its rank
// among the row's visible masked positions (a path: its ancestors, one a depth). The row itself is
// the last visible one; it sees own positions >= first.
struct Window {
  int64_t masked_from = INT64_MAX;  // INT64_MAX: no tree mask
  int64_t first = 0;                // the earliest own position seen (0: no window)
  __device__ bool sees(const PagedAttentionParams& p, int64_t t, int64_t pos) const {
    if (first == 0) return true;
    if (pos < masked_from) return pos >= first;
    return masked_from + visible_below(p, t, pos - masked_from) >= first;
  }
};

__device__ __forceinline__ Window window_of(const PagedAttentionParams& p, int64_t entry, int64_t t, int64_t len) {
  Window w;
  if (p.mask) w.masked_from = min(len, static_cast<int64_t>(p.mask_start[entry]));
  w.first = window_first(p, entry, t, len);
  return w;
}

struct SliceLayout {
  int64_t first_query = 0;
  int64_t max_chunks = 0;  // chunk stride of the workspace
  int64_t group = 1;       // query heads per kv head
  int64_t heads_per_block = 1;
};

// Workspace layout per (query in slice, head): max_chunks x [max, sum], then max_chunks x head_dim.
__device__ __forceinline__ float* partial_base(const PagedAttentionParams& p, const SliceLayout& s, int64_t q_local,
                                               int64_t head, int64_t head_dim) {
  return static_cast<float*>(p.workspace) + (q_local * p.num_heads + head) * s.max_chunks * (head_dim + 2);
}

// G: query heads a block holds in registers (the GQA group rounded up to a power of two, at most
// kMaxGroup), so small groups do not pay for kMaxGroup's registers.
template <typename T, int HEAD_DIM, int G>
__global__ void __launch_bounds__(kWarpsFor<HEAD_DIM> * 32) attention_chunk_kernel(PagedAttentionParams p,
                                                                                  SliceLayout s) {
  constexpr int kWarps = kWarpsFor<HEAD_DIM>;
  // Small heads (the test models have head_dim 8 to 32) leave lanes >= HEAD_DIM idle.
  constexpr int PER_LANE = HEAD_DIM >= 32 ? HEAD_DIM / 32 : 1;
  constexpr int ACTIVE = HEAD_DIM >= 32 ? 32 : HEAD_DIM;
  using Vec = typename LaneVec<PER_LANE>::T;
  const int64_t q_local = blockIdx.x, t = s.first_query + q_local;
  const int64_t blocks_per_kv = (s.group + s.heads_per_block - 1) / s.heads_per_block;
  const int64_t kv_head = blockIdx.y / blocks_per_kv;
  const int64_t head0 = kv_head * s.group + (blockIdx.y % blocks_per_kv) * s.heads_per_block;
  const int g = static_cast<int>(min(s.heads_per_block, kv_head * s.group + s.group - head0));
  const int64_t chunk = blockIdx.z;
  const int64_t entry = entry_of(p, t, kv_head);
  const int64_t len = p.kv_len[entry];
  const int64_t begin = chunk * kAttentionChunk;
  if (begin >= len) return;
  const int64_t end = min(begin + kAttentionChunk, len);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const bool active = lane < ACTIVE;
  const Window window = window_of(p, entry, t, len);
  if (end <= window.first && end <= window.masked_from) {  // the whole chunk is behind the window
    for (int idx = threadIdx.x; idx < g * HEAD_DIM; idx += kWarps * 32) {
      float* part = partial_base(p, s, q_local, head0 + idx / HEAD_DIM, HEAD_DIM);
      if (idx % HEAD_DIM == 0) {
        part[chunk * 2] = -INFINITY;
        part[chunk * 2 + 1] = 0.0f;
      }
      part[s.max_chunks * 2 + chunk * HEAD_DIM + idx % HEAD_DIM] = 0.0f;
    }
    return;
  }

  float q[G][PER_LANE];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    if (h >= g) break;
    Vec raw{};
    if (active)
      raw = reinterpret_cast<const Vec*>(static_cast<const T*>(p.q) + (t * p.num_heads + head0 + h) * HEAD_DIM)[lane];
    unpack<T, PER_LANE>(raw, q[h]);
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) q[h][i] *= p.scale;
  }
  float m[G], l[G], acc[G][PER_LANE];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) acc[h][i] = 0.0f;
  }

  const int64_t list = p.tables_per_seq > 1 ? kv_head : 0;
  const int32_t* table =
      p.block_tables + (static_cast<int64_t>(p.token_seq[t]) * p.tables_per_seq + list) * p.table_stride;
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  for (int64_t base = begin + warp; base < end; base += kWarps * kUnroll) {
    Vec kraw[kUnroll], vraw[kUnroll];
    bool use[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t pos = base + u * kWarps;
      use[u] = pos < end && visible(p, entry, t, pos) && window.sees(p, t, pos);
      kraw[u] = Vec{};
      vraw[u] = Vec{};
      if (use[u] && active) {
        const int64_t slot = static_cast<int64_t>(table[pos / p.block_size]) * p.block_size + pos % p.block_size;
        const int64_t row = (slot * p.num_kv_heads + kv_head) * HEAD_DIM;
        kraw[u] = reinterpret_cast<const Vec*>(k_cache + row)[lane];
        vraw[u] = reinterpret_cast<const Vec*>(v_cache + row)[lane];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!use[u]) continue;
      float kf[PER_LANE], vf[PER_LANE];
      unpack<T, PER_LANE>(kraw[u], kf);
      unpack<T, PER_LANE>(vraw[u], vf);
#pragma unroll
      for (int h = 0; h < G; ++h) {
        if (h >= g) break;
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) dot = fmaf(q[h][i], kf[i], dot);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
        const float m_new = fmaxf(m[h], dot);
        const float correction = __expf(m[h] - m_new);
        const float weight = __expf(dot - m_new);
        l[h] = l[h] * correction + weight;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) acc[h][i] = fmaf(acc[h][i], correction, weight * vf[i]);
        m[h] = m_new;
      }
    }
  }

  // Merge the warps in warp order.
  __shared__ float sm_m[kWarps][G], sm_l[kWarps][G];
  __shared__ float sm_acc[kWarps][G][HEAD_DIM];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    if (h >= g) break;
    if (lane == 0) {
      sm_m[warp][h] = m[h];
      sm_l[warp][h] = l[h];
    }
    if (active)
#pragma unroll
      for (int i = 0; i < PER_LANE; ++i) sm_acc[warp][h][lane * PER_LANE + i] = acc[h][i];
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < g * HEAD_DIM; idx += kWarps * 32) {
    const int h = idx / HEAD_DIM, d = idx % HEAD_DIM;
    float big = -INFINITY;
    for (int w = 0; w < kWarps; ++w) big = fmaxf(big, sm_m[w][h]);
    float sum = 0.0f, out = 0.0f;
    if (big != -INFINITY)
      for (int w = 0; w < kWarps; ++w) {
        if (sm_m[w][h] == -INFINITY) continue;
        const float f = __expf(sm_m[w][h] - big);
        sum = fmaf(sm_l[w][h], f, sum);
        out = fmaf(sm_acc[w][h][d], f, out);
      }
    float* part = partial_base(p, s, q_local, head0 + h, HEAD_DIM);
    if (d == 0) {
      part[chunk * 2] = big;
      part[chunk * 2 + 1] = sum;
    }
    part[s.max_chunks * 2 + chunk * HEAD_DIM + d] = out;
  }
}

// Query tiles (verification trees, prefill chunks): block (tile, kv head, chunk) stages the chunk's
// K/V rows in shared memory once and serves every (query, head) pair of the tile from there, warp
// w taking pairs w, w + kWarps, ... For each pair it replays the single-query kernel's arithmetic
// exactly: kWarps online-softmax states over positions begin + w', begin + w' + kWarps, ... (w' the
// single-query kernel's warp), merged in w' order with the same operations, so a query gets the
// same bits here as there (decode and verify agree).
constexpr int kTileWarps = 8;
// The merge keeps one weight per chunk in shared memory: contexts up to 128K positions.
constexpr int64_t kMaxMergeChunks = 2048;

template <typename T, int HEAD_DIM>
__global__ void __launch_bounds__(kTileWarps * 32) attention_tile_kernel(PagedAttentionParams p, SliceLayout s) {
  constexpr int kWarps = kWarpsFor<HEAD_DIM>;  // the single-query kernel's position interleave
  constexpr int PER_LANE = HEAD_DIM >= 32 ? HEAD_DIM / 32 : 1;
  constexpr int ACTIVE = HEAD_DIM >= 32 ? 32 : HEAD_DIM;
  using Vec = typename LaneVec<PER_LANE>::T;
  __shared__ Vec k_rows[kAttentionChunk][32], v_rows[kAttentionChunk][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t first = p.tiles[blockIdx.x * 2], count = p.tiles[blockIdx.x * 2 + 1];
  const int64_t kv_head = blockIdx.y, chunk = blockIdx.z;
  const int64_t begin = chunk * kAttentionChunk;
  int64_t longest = 0;
  for (int64_t i = 0; i < count; ++i) longest = max(longest, static_cast<int64_t>(p.kv_len[entry_of(p, first + i, kv_head)]));
  if (begin >= longest) return;
  const int64_t stop = min(begin + kAttentionChunk, longest);
  const int64_t list = p.tables_per_seq > 1 ? kv_head : 0;
  const int32_t* table =
      p.block_tables + (static_cast<int64_t>(p.token_seq[first]) * p.tables_per_seq + list) * p.table_stride;
#pragma unroll 4
  for (int64_t idx = threadIdx.x; idx < (stop - begin) * 32; idx += blockDim.x) {
    const int64_t r = idx / 32, l = idx % 32, pos = begin + r;
    Vec kv{}, vv{};
    if (l < ACTIVE) {
      const int64_t slot = static_cast<int64_t>(table[pos / p.block_size]) * p.block_size + pos % p.block_size;
      const int64_t row = (slot * p.num_kv_heads + kv_head) * HEAD_DIM;
      kv = reinterpret_cast<const Vec*>(static_cast<const T*>(p.k_cache) + row)[l];
      vv = reinterpret_cast<const Vec*>(static_cast<const T*>(p.v_cache) + row)[l];
    }
    k_rows[r][l] = kv;
    v_rows[r][l] = vv;
  }
  __syncthreads();
  const bool active = lane < ACTIVE;
  for (int64_t pair = warp; pair < count * s.group; pair += kTileWarps) {
    const int64_t t = first + pair / s.group, head = kv_head * s.group + pair % s.group;
    const int64_t entry = entry_of(p, t, kv_head);
    const int64_t end = min(begin + kAttentionChunk, static_cast<int64_t>(p.kv_len[entry]));
    if (begin >= end) continue;
    float q[PER_LANE];
    Vec raw{};
    if (active) raw = reinterpret_cast<const Vec*>(static_cast<const T*>(p.q) + (t * p.num_heads + head) * HEAD_DIM)[lane];
    unpack<T, PER_LANE>(raw, q);
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) q[i] *= p.scale;
    float m[kWarps], l[kWarps], acc[kWarps][PER_LANE];
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      m[w] = -INFINITY;
      l[w] = 0.0f;
#pragma unroll
      for (int i = 0; i < PER_LANE; ++i) acc[w][i] = 0.0f;
    }
    // Step j advances every sub-state w by its next position begin + w + j * kWarps: the states are
    // independent chains (instruction-level parallelism), each still walked in position order. A
    // hidden position leaves its state untouched (selected, not branched, so the chains overlap).
    const int64_t mask_from = p.mask ? p.mask_start[entry] : INT64_MAX;
    const uint64_t* mask_row = p.mask ? p.mask + t * p.mask_words : nullptr;
    for (int64_t base = begin; base < end; base += kWarps) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const int64_t pos = base + w;
        bool use = pos < end;
        if (use && pos >= mask_from) {
          const int64_t bit = pos - mask_from;
          use = bit < p.mask_words * 64 && ((mask_row[bit / 64] >> (bit % 64)) & 1u);
        }
        const int64_t row = use ? pos - begin : 0;
        float kf[PER_LANE], vf[PER_LANE];
        unpack<T, PER_LANE>(k_rows[row][lane], kf);
        unpack<T, PER_LANE>(v_rows[row][lane], vf);
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) dot = fmaf(q[i], kf[i], dot);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, offset);
        if (!use) continue;
        const float m_new = fmaxf(m[w], dot);
        const float correction = __expf(m[w] - m_new);
        const float weight = __expf(dot - m_new);
        l[w] = l[w] * correction + weight;
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) acc[w][i] = fmaf(acc[w][i], correction, weight * vf[i]);
        m[w] = m_new;
      }
    }
    float big = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) big = fmaxf(big, m[w]);
    float sum = 0.0f, out[PER_LANE];
#pragma unroll
    for (int i = 0; i < PER_LANE; ++i) out[i] = 0.0f;
    if (big != -INFINITY)
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        if (m[w] == -INFINITY) continue;
        const float f = __expf(m[w] - big);
        sum = fmaf(l[w], f, sum);
#pragma unroll
        for (int i = 0; i < PER_LANE; ++i) out[i] = fmaf(acc[w][i], f, out[i]);
      }
    float* part = partial_base(p, s, t - s.first_query, head, HEAD_DIM);
    if (lane == 0) {
      part[chunk * 2] = big;
      part[chunk * 2 + 1] = sum;
    }
    if (active)
#pragma unroll
      for (int i = 0; i < PER_LANE; ++i) part[s.max_chunks * 2 + chunk * HEAD_DIM + lane * PER_LANE + i] = out[i];
  }
}

// Merges a query head's chunks in chunk order; a query that sees nothing gets zeros.
template <typename T, int HEAD_DIM>
__global__ void attention_merge_kernel(PagedAttentionParams p, SliceLayout s) {
  const int64_t q_local = blockIdx.x, t = s.first_query + q_local, head = blockIdx.y;
  const int64_t kv_head = head / (p.num_heads / p.num_kv_heads);
  const int64_t chunks = (p.kv_len[entry_of(p, t, kv_head)] + kAttentionChunk - 1) / kAttentionChunk;
  const float* part = partial_base(p, s, q_local, head, HEAD_DIM);
  // The chunks' weights exp(max_c - max) are computed once, cooperatively, into shared memory;
  // every sum then runs over the chunks in chunk order.
  __shared__ float weight[kMaxMergeChunks];
  __shared__ float shared_big, shared_sum;
  // A sink joins the softmax as one more logit with no value (the larger max shifts both).
  const float sink = p.sinks ? to_float(static_cast<const T*>(p.sinks)[head]) : -INFINITY;
  if (threadIdx.x == 0) {
    float big = sink;
    for (int64_t c = 0; c < chunks; ++c) big = fmaxf(big, part[c * 2]);
    shared_big = big;
  }
  __syncthreads();
  const float big = shared_big;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
    weight[c] = big == -INFINITY || part[c * 2] == -INFINITY ? 0.0f : __expf(part[c * 2] - big);
  __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) sum = fmaf(part[c * 2 + 1], weight[c], sum);  // empty chunks add 0
    if (p.sinks) sum += __expf(sink - big);
    shared_sum = sum;
  }
  __syncthreads();
  const float sum = shared_sum;
  for (int d = threadIdx.x; d < HEAD_DIM; d += blockDim.x) {
    float out = 0.0f;
    if (big != -INFINITY)
#pragma unroll 8
      for (int64_t c = 0; c < chunks; ++c) out = fmaf(part[s.max_chunks * 2 + c * HEAD_DIM + d], weight[c], out);
    const float value = sum > 0.0f ? out / sum : 0.0f;
    static_cast<T*>(p.out)[(t * p.num_heads + head) * HEAD_DIM + d] = from_float<T>(value);
  }
}

template <typename T, int HEAD_DIM>
void launch(const PagedAttentionParams& p, int64_t slice_queries, cudaStream_t stream) {
  SliceLayout s;
  s.max_chunks = (p.max_kv_len + kAttentionChunk - 1) / kAttentionChunk;
  s.group = p.num_heads / p.num_kv_heads;
  s.heads_per_block = s.group < kMaxGroup ? s.group : kMaxGroup;
  const int64_t blocks_per_kv = (s.group + s.heads_per_block - 1) / s.heads_per_block;
  if (p.tiles && p.num_tiles < p.tokens && slice_queries >= p.tokens && HEAD_DIM <= 128 && !p.sinks && p.window == 0) {
    s.first_query = 0;
    const dim3 grid(static_cast<unsigned>(p.num_tiles), static_cast<unsigned>(p.num_kv_heads),
                    static_cast<unsigned>(s.max_chunks));
    attention_tile_kernel<T, HEAD_DIM><<<grid, kTileWarps * 32, 0, stream>>>(p, s);
    attention_merge_kernel<T, HEAD_DIM><<<dim3(static_cast<unsigned>(p.tokens), static_cast<unsigned>(p.num_heads)),
                                          HEAD_DIM < 128 ? 32 : 128, 0, stream>>>(p, s);
    return;
  }
  for (int64_t first = 0; first < p.tokens; first += slice_queries) {
    s.first_query = first;
    const int64_t n = p.tokens - first < slice_queries ? p.tokens - first : slice_queries;
    const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(p.num_kv_heads * blocks_per_kv),
                    static_cast<unsigned>(s.max_chunks));
    const unsigned threads = kWarpsFor<HEAD_DIM> * 32;
    if (s.heads_per_block <= 1) attention_chunk_kernel<T, HEAD_DIM, 1><<<grid, threads, 0, stream>>>(p, s);
    else if (s.heads_per_block <= 2) attention_chunk_kernel<T, HEAD_DIM, 2><<<grid, threads, 0, stream>>>(p, s);
    else if (s.heads_per_block <= 4) attention_chunk_kernel<T, HEAD_DIM, 4><<<grid, threads, 0, stream>>>(p, s);
    else attention_chunk_kernel<T, HEAD_DIM, kMaxGroup><<<grid, threads, 0, stream>>>(p, s);
    attention_merge_kernel<T, HEAD_DIM><<<dim3(static_cast<unsigned>(n), static_cast<unsigned>(p.num_heads)),
                                       HEAD_DIM < 128 ? 32 : 128, 0, stream>>>(p, s);
  }
}

}  // namespace

int64_t attention_workspace_bytes_per_query(int64_t num_heads, int64_t head_dim, int64_t max_kv_len) {
  const int64_t chunks = (max_kv_len + kAttentionChunk - 1) / kAttentionChunk;
  return num_heads * chunks * (head_dim + 2) * static_cast<int64_t>(sizeof(float));
}

bool paged_attention(const PagedAttentionParams& p, cudaStream_t stream) {
  if (p.tokens == 0) return true;
  if (p.num_kv_heads <= 0 || p.num_heads % p.num_kv_heads != 0 || p.max_kv_len <= 0) return false;
  if (flash_attention_supports(p)) return flash_attention(p, stream);
  if ((p.max_kv_len + kAttentionChunk - 1) / kAttentionChunk > kMaxMergeChunks) return false;
  const int64_t per_query = attention_workspace_bytes_per_query(p.num_heads, p.head_dim, p.max_kv_len);
  const int64_t slice = p.workspace_bytes / per_query;
  if (slice < 1) return false;
  bool supported = true;
  dispatch_storage(p.storage, [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (p.head_dim) {
      case 8: launch<T, 8>(p, slice, stream); break;
      case 16: launch<T, 16>(p, slice, stream); break;
      case 32: launch<T, 32>(p, slice, stream); break;
      case 64: launch<T, 64>(p, slice, stream); break;
      case 128: launch<T, 128>(p, slice, stream); break;
      case 256: launch<T, 256>(p, slice, stream); break;
      default: supported = false;
    }
  });
  return supported;
}

}  // namespace drift::cuda
