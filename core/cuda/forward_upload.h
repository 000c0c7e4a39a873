#pragma once
// ForwardUpload: one forward's index metadata (token ids, positions, logit rows, attention
// sequences, visible lengths, KV slots, block tables, tree masks) packed into pinned host memory
// and sent to the device in one copy; the ops then read the device copies.
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "core/backend.h"
#include "core/cuda/device_arena.h"
#include "core/cuda/pinned_staging.h"

namespace drift::cuda_backend {

// Device view of an AttentionMetadata.
struct DeviceAttention {
  int64_t tokens = 0;
  const int32_t* token_seq = nullptr;
  const int32_t* kv_len = nullptr;
  const int64_t* slots = nullptr;
  const int32_t* block_tables = nullptr;  // [num_seqs, table_stride], padded with page 0
  int64_t table_stride = 0;
  int64_t tables_per_seq = 1;             // AttentionMetadata::tables_per_seq
  const int32_t* tiles = nullptr;         // query tiles (kernels/cuda/ops.h PagedAttentionParams)
  int64_t num_tiles = 0;
  int64_t max_tile_queries = 0;  // the largest tile (sizes the attention grid)
  const int32_t* mask_start = nullptr;    // null when the batch has no tree
  const uint64_t* mask = nullptr;
  int64_t mask_words = 0;
  int64_t max_kv_len = 0;                 // bucketed (see forward_upload.cpp)
};

class ForwardUpload {
 public:
  ForwardUpload();
  ~ForwardUpload();
  ForwardUpload(const ForwardUpload&) = delete;
  ForwardUpload& operator=(const ForwardUpload&) = delete;

  // Uploads `inputs` into the upload's own device buffer (the same addresses for the same
  // shape, as graph replay needs).
  void upload(const ForwardInputs& inputs, cudaStream_t stream);
  // Uploads one AttentionMetadata on its own (a compute-service call outside a forward).
  DeviceAttention upload_attention(const AttentionMetadata& meta, DeviceArena& arena, PinnedStaging& staging,
                                   cudaStream_t stream);

  const ForwardInputs& inputs() const { return inputs_; }
  // After the forward its host vectors die; later look-ups must not match their addresses.
  void forget_inputs() { inputs_ = ForwardInputs{}; }
  const int32_t* tokens() const { return tokens_; }
  const int32_t* positions() const { return positions_; }
  const int32_t* logit_rows() const { return logit_rows_; }
  const DeviceAttention& attention() const { return attention_; }
  const DeviceAttention& window_attention() const { return window_attention_; }  // when inputs() has one
  // Identifies everything a forward's launches depend on besides device memory contents: token
  // and row counts, sequences, the padded block-table width, the bucketed longest context, the
  // mask width. Two forwards with one key run identical launches.
  uint64_t shape_key() const { return shape_key_; }
  // Changes whenever the device buffer moved (recorded launches point at the old one).
  uint64_t generation() const { return generation_; }

 private:
  void reserve_staging(size_t bytes);

  ForwardInputs inputs_;
  const int32_t* tokens_ = nullptr;
  const int32_t* positions_ = nullptr;
  const int32_t* logit_rows_ = nullptr;
  DeviceAttention attention_, window_attention_;
  uint64_t shape_key_ = 0;
  uint64_t generation_ = 0;
  char* device_ = nullptr;  // the forward upload's device copy
  size_t device_bytes_ = 0;
  char* staging_ = nullptr;  // pinned
  size_t staging_bytes_ = 0;
  cudaEvent_t staged_ = nullptr;  // the last copy out of staging_ has finished
};

}  // namespace drift::cuda_backend
