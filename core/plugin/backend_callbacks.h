#pragma once
// The compute-primitive and tensor services of drift_host_api_t, implemented over a Backend.
//
// install_compute_callbacks fills the HostCallbacks members embedding, gemm, rms_norm, rope,
// attention, silu_mul, softmax, top_k, tensor_alloc, tensor_free, tensor_copy,
// load_safetensors, add, concat and page_scores, and -- given the engine's KV --
// page_key_summary (every other member is left as it is). The contracts are those of
// drift/plugin.h; in addition each callback validates its drift_tensor_t arguments -- device
// and dtype (see below), row-major contiguous strides (all-zero strides read as "contiguous,
// unspecified"), non-null data, shapes consistent with each other -- and answers DRIFT_ERROR_INVALID_ARGUMENT, with one
// spdlog warning naming the service, the argument and its shape, instead of computing. Outputs
// may alias an input only where the header allows it (rms_norm, rope, softmax, silu_mul, and
// only exactly: out == input); a partial overlap is an invalid argument.
//
// Every service runs through the Backend, so a plugin written once runs on each backend:
//  - tensors live on the backend's device (DRIFT_DEVICE_CPU for cpu, DRIFT_DEVICE_CUDA for
//    cuda); tensor_alloc and load_safetensors allocate there (load_safetensors converts to the
//    compute dtype: F32 on cpu, BF16 on cuda), tensor_copy copies between the host and it;
//  - weights (table, w, bias, weight), rope's x and attention's q/k/v/out are in the compute
//    dtype; the other activations (gemm's x and out, rms_norm, silu_mul, softmax, top_k's x,
//    embedding's out) may also be F32; top_k values and page summaries are F32;
//  - index tensors (ids, positions, q_positions) are I32 on the host or on the device;
//  - on a device the work is queued on the backend's stream (the one hooks receive).
//
// Attention (drift_attention_args_t):
//  - dense: the caller's own K/V [n_kv, num_kv_heads, head_dim]; K/V row j holds position j.
//  - paged, whole sequence (k = v = NULL, num_pages == 0): the engine KV of seq_id at `layer`,
//    positions 0 .. num_tokens-1 of its block table.
//  - paged, explicit page list (num_pages > 0): only the listed pages (each MUST be in the
//    sequence's block table, no duplicates; any order -- they are attended in block-table
//    order). The attended positions are those the pages hold, in block-table order; that is
//    what n_kv and the mask's columns count.
//  Without a mask, query i sees the attended positions <= q_positions[i] (causal by position;
//  a query beyond the stored KV sees all of it). With a mask ([n_q, n_kv], 1 = may attend) the
//  mask alone decides and q_positions may be NULL. A query that sees nothing gets zeros.
//  num_heads must be a multiple of num_kv_heads (GQA). The ABI's attention arguments carry one
//  page list, so there is no per-KV-head variant to serve here. The paged variants need `kv`
//  below; without it (or when it yields no KV) they answer DRIFT_ERROR_NOT_SUPPORTED. Unknown
//  seq_id: whatever kv.block_table answers (DRIFT_ERROR_NOT_FOUND for the engine).
//
// Lifetime: the callbacks keep a reference to `backend` (it must outlive them) and copies of
// what they need from `model` and `rope`.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/backend.h"
#include "core/model/model_config.h"
#include "core/model/rope_frequencies.h"
#include "core/plugin/host_services.h"

namespace drift {

// How the attention service reaches the engine's paged KV cache.
struct EngineKvAccess {
  // The engine's per-layer KV ([num_slots, num_kv_heads, head_dim], slot = page * block_size +
  // offset); may return nullptr while there is none (paged attention is then NOT_SUPPORTED).
  std::function<const std::vector<LayerKV>*()> kv_layers;
  int64_t block_size = 0;  // KV tokens per page
  // A sequence's block table and the number of tokens whose KV it holds: the same function
  // the engine installs as HostCallbacks::block_table.
  std::function<drift_status_t(drift_seq_id_t, const drift_page_id_t** pages, int64_t* num_pages,
                               int64_t* num_tokens)>
      block_table;
  // Per layer: whether its KV is in the sliding-window page group, which those block tables do
  // not address (such a layer is NOT_SUPPORTED here). Empty: none is.
  std::vector<bool> windowed_layers;
  void refuse_windowed(int64_t layer) const;
};

// Compute primitives + tensor memory for `backend`; paged attention NOT_SUPPORTED.
void install_compute_callbacks(HostCallbacks& callbacks, Backend& backend, const ModelConfig& model,
                               const RopeFrequencies& rope);
// The same, with paged attention (whole sequence or explicit page list) over the engine's KV.
void install_compute_callbacks(HostCallbacks& callbacks, Backend& backend, const ModelConfig& model,
                               const RopeFrequencies& rope, EngineKvAccess kv);

}  // namespace drift
