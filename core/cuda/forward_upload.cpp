#include "core/cuda/forward_upload.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "core/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"

namespace drift::cuda_backend {

// Lays arrays out back to back (each 256-byte aligned) in host staging memory, remembering
// where each one's device copy will be.
namespace {

class Packer {
 public:
  template <typename T>
  size_t add(std::span<const T> values) {
    const size_t offset = size_;
    parts_.push_back({offset, values.data(), values.size_bytes()});
    size_ = (offset + values.size_bytes() + 255) / 256 * 256;
    return offset;
  }
  size_t size() const { return std::max<size_t>(size_, 256); }
  void copy_into(char* staging) const {
    for (const Part& p : parts_)
      if (p.bytes) std::memcpy(staging + p.offset, p.data, p.bytes);
  }

 private:
  struct Part {
    size_t offset;
    const void* data;
    size_t bytes;
  };
  std::vector<Part> parts_;
  size_t size_ = 0;
};

struct AttentionOffsets {
  size_t token_seq, kv_len, slots, tables, mask_start, mask, tiles;
  int64_t table_stride = 0;
  int64_t num_tiles = 0;
  int64_t max_tile_queries = 0;
};

// Runs of consecutive queries of one sequence, cut every kAttentionTileQueries: [first, count] pairs.
std::vector<int32_t> query_tiles(const AttentionMetadata& meta) {
  std::vector<int32_t> tiles;
  const auto n = static_cast<int32_t>(meta.token_seq.size());
  for (int32_t t = 0; t < n;) {
    int32_t count = 1;
    while (t + count < n && count < cuda::kAttentionTileQueries && meta.token_seq[t + count] == meta.token_seq[t])
      ++count;
    tiles.push_back(t);
    tiles.push_back(count);
    t += count;
  }
  return tiles;
}

// Longest context rounded up to a power of two (at least 256): attention grids and block-table
// widths come in few sizes, so recorded forwards can be replayed as contexts grow.
int64_t context_bucket(const AttentionMetadata& meta) {
  int64_t longest = 0;
  for (int32_t len : meta.kv_len) longest = std::max<int64_t>(longest, len);
  int64_t bucket = 256;
  while (bucket < longest) bucket *= 2;
  return longest == 0 ? 0 : bucket;
}

// Block tables are ragged on the host; the device wants [num_seqs, stride], stride covering the
// bucketed context.
std::vector<int32_t> pad_tables(const AttentionMetadata& meta, int64_t& stride) {
  stride = 1;
  for (const auto& t : meta.block_tables) stride = std::max<int64_t>(stride, static_cast<int64_t>(t.size()));
  stride = std::max<int64_t>(1, stride == 1 ? 1 : int64_t{1} << (64 - __builtin_clzll(stride - 1)));
  std::vector<int32_t> flat(std::max<size_t>(meta.block_tables.size(), 1) * stride, 0);
  for (size_t s = 0; s < meta.block_tables.size(); ++s)
    std::copy(meta.block_tables[s].begin(), meta.block_tables[s].end(), flat.begin() + s * stride);
  return flat;
}

template <typename T>
std::span<const T> span_of(const std::vector<T>& v) {
  return {v.data(), v.size()};
}

AttentionOffsets pack_attention(const AttentionMetadata& meta, const std::vector<int32_t>& tables,
                                int64_t table_stride, const std::vector<int32_t>& tiles, Packer& packer) {
  AttentionOffsets o;
  o.token_seq = packer.add(span_of(meta.token_seq));
  o.kv_len = packer.add(span_of(meta.kv_len));
  o.slots = packer.add(span_of(meta.slots));
  o.tables = packer.add(span_of(tables));
  o.mask_start = packer.add(span_of(meta.mask_start));
  o.mask = packer.add(span_of(meta.mask));
  o.tiles = packer.add(span_of(tiles));
  o.num_tiles = static_cast<int64_t>(tiles.size() / 2);
  for (size_t i = 1; i < tiles.size(); i += 2) o.max_tile_queries = std::max<int64_t>(o.max_tile_queries, tiles[i]);
  o.table_stride = table_stride;
  return o;
}

DeviceAttention device_view(const AttentionMetadata& meta, const AttentionOffsets& o, const char* base) {
  DeviceAttention d;
  d.tokens = static_cast<int64_t>(meta.token_seq.size());
  d.token_seq = reinterpret_cast<const int32_t*>(base + o.token_seq);
  d.kv_len = reinterpret_cast<const int32_t*>(base + o.kv_len);
  d.slots = reinterpret_cast<const int64_t*>(base + o.slots);
  d.block_tables = reinterpret_cast<const int32_t*>(base + o.tables);
  d.table_stride = o.table_stride;
  d.tables_per_seq = meta.tables_per_seq;
  d.tiles = reinterpret_cast<const int32_t*>(base + o.tiles);
  d.num_tiles = o.num_tiles;
  d.max_tile_queries = o.max_tile_queries;
  if (!meta.mask.empty()) {
    d.mask_start = reinterpret_cast<const int32_t*>(base + o.mask_start);
    d.mask = reinterpret_cast<const uint64_t*>(base + o.mask);
    d.mask_words = meta.mask_words;
  }
  d.max_kv_len = context_bucket(meta);
  return d;
}

}  // namespace


ForwardUpload::ForwardUpload() { DRIFT_CUDA(cudaEventCreateWithFlags(&staged_, cudaEventDisableTiming)); }

ForwardUpload::~ForwardUpload() {
  if (staged_) cudaEventDestroy(staged_);
  if (device_) cudaFree(device_);
  if (staging_) cudaFreeHost(staging_);
}

void ForwardUpload::reserve_staging(size_t bytes) {
  DRIFT_CUDA(cudaEventSynchronize(staged_));  // the previous copy has left the staging memory
  if (bytes <= staging_bytes_) return;
  if (staging_) DRIFT_CUDA(cudaFreeHost(staging_));
  staging_ = nullptr;
  staging_bytes_ = std::max(bytes, staging_bytes_ * 2);
  DRIFT_CUDA(cudaMallocHost(reinterpret_cast<void**>(&staging_), staging_bytes_));
}

void ForwardUpload::upload(const ForwardInputs& inputs, cudaStream_t stream) {
  inputs_ = inputs;
  Packer packer;
  const size_t tokens = packer.add(span_of(*inputs.tokens));
  const size_t positions = packer.add(span_of(*inputs.positions));
  const size_t rows = packer.add(span_of(*inputs.logit_rows));
  int64_t stride = 0;
  const std::vector<int32_t> tables = pad_tables(*inputs.attention, stride);
  const std::vector<int32_t> tiles = query_tiles(*inputs.attention);
  const AttentionOffsets attn = pack_attention(*inputs.attention, tables, stride, tiles, packer);
  int64_t window_stride = 0;
  std::vector<int32_t> window_tables, window_tiles;
  AttentionOffsets window{};
  if (inputs.window_attention) {
    window_tables = pad_tables(*inputs.window_attention, window_stride);
    window_tiles = query_tiles(*inputs.window_attention);
    window = pack_attention(*inputs.window_attention, window_tables, window_stride, window_tiles, packer);
  }

  reserve_staging(packer.size());
  packer.copy_into(staging_);
  if (packer.size() > device_bytes_) {
    DRIFT_CUDA(cudaStreamSynchronize(stream));  // queued work may still read the old buffer
    if (device_) DRIFT_CUDA(cudaFree(device_));
    device_bytes_ = std::max(packer.size(), 2 * device_bytes_);
    DRIFT_CUDA(cudaMalloc(&device_, device_bytes_));
    ++generation_;
  }
  char* device = device_;
  DRIFT_CUDA(cudaMemcpyAsync(device, staging_, packer.size(), cudaMemcpyHostToDevice, stream));
  DRIFT_CUDA(cudaEventRecord(staged_, stream));
  tokens_ = reinterpret_cast<const int32_t*>(device + tokens);
  positions_ = reinterpret_cast<const int32_t*>(device + positions);
  logit_rows_ = reinterpret_cast<const int32_t*>(device + rows);
  attention_ = device_view(*inputs.attention, attn, device);
  window_attention_ =
      inputs.window_attention ? device_view(*inputs.window_attention, window, device) : DeviceAttention{};
  const AttentionMetadata& m = *inputs.attention;
  uint64_t key = 1469598103934665603ull;
  for (uint64_t v :
       {uint64_t(inputs.tokens->size()), uint64_t(inputs.logit_rows->size()), uint64_t(m.block_tables.size()),
        uint64_t(stride), uint64_t(attention_.max_kv_len), uint64_t(m.mask.empty() ? 0 : m.mask_words),
        uint64_t(m.tables_per_seq), uint64_t(attn.num_tiles), uint64_t(attn.max_tile_queries),
        // the window group's tables: their width and count shape its layers' launches
        uint64_t(inputs.window_attention ? inputs.window_attention->block_tables.size() : 0), uint64_t(window_stride),
        uint64_t(window_attention_.max_kv_len)})
    key = (key ^ v) * 1099511628211ull;
  shape_key_ = key;
}

DeviceAttention ForwardUpload::upload_attention(const AttentionMetadata& meta, DeviceArena& arena,
                                                PinnedStaging& staging, cudaStream_t stream) {
  Packer packer;
  int64_t stride = 0;
  const std::vector<int32_t> tables = pad_tables(meta, stride);
  const std::vector<int32_t> tiles = query_tiles(meta);
  const AttentionOffsets attn = pack_attention(meta, tables, stride, tiles, packer);
  std::vector<char> host(packer.size());
  packer.copy_into(host.data());
  char* device = static_cast<char*>(arena.allocate(packer.size()));
  staging.upload(device, host.data(), host.size(), stream);
  return device_view(meta, attn, device);
}

}  // namespace drift::cuda_backend
