#include "core/plugin/page_key_summary.h"

#include <algorithm>
#include <unordered_map>

#include "core/plugin/tensor_checks.h"

namespace drift {

using namespace tensor_checks;

drift_status_t cpu_page_key_summary(const EngineKvAccess& kv, drift_seq_id_t seq, int32_t layer,
                                    const drift_page_id_t* pages, int32_t num_pages, drift_tensor_t* kmax_arg,
                                    drift_tensor_t* kmin_arg) {
  const std::vector<LayerKV>* layers = kv.kv_layers ? kv.kv_layers() : nullptr;
  if (!layers || !kv.block_table || kv.block_size <= 0)
    refuse(DRIFT_ERROR_NOT_SUPPORTED, "the engine has no paged KV to summarise");
  if (layer < 0 || layer >= static_cast<int32_t>(layers->size()))
    invalid("layer = {} is outside the model's {} layers", layer, layers->size());
  if (num_pages < 0 || (num_pages > 0 && !pages)) invalid("pages is NULL or num_pages = {} is negative", num_pages);
  const Tensor& keys = (*layers)[layer].k;  // [slots, kv_heads, head_dim]
  const int64_t kv_heads = keys.dim(1), head_dim = keys.dim(2), row = kv_heads * head_dim;
  const auto& kmax = checked("kmax", kmax_arg, DRIFT_DTYPE_F32);
  const auto& kmin = checked("kmin", kmin_arg, DRIFT_DTYPE_F32);
  expect_shape("kmax", kmax, {num_pages, kv_heads, head_dim}, "[num_pages, num_kv_heads, head_dim]");
  expect_shape("kmin", kmin, {num_pages, kv_heads, head_dim}, "[num_pages, num_kv_heads, head_dim]");
  expect_disjoint("kmin", kmin, "kmax", kmax, false);

  const drift_page_id_t* table = nullptr;
  int64_t table_pages = 0, num_tokens = 0;
  if (drift_status_t status = kv.block_table(seq, &table, &table_pages, &num_tokens); status != DRIFT_OK)
    return status;
  std::unordered_map<drift_page_id_t, int64_t> block_of;
  for (int64_t b = 0; b < table_pages; ++b) block_of.emplace(table[b], b);

  const float* k = keys.as<float>();
  for (int32_t i = 0; i < num_pages; ++i) {
    auto it = block_of.find(pages[i]);
    if (it == block_of.end()) invalid("pages[{}] = {} is not in sequence {}'s block table", i, pages[i], seq);
    const int64_t filled = std::clamp<int64_t>(num_tokens - it->second * kv.block_size, 0, kv.block_size);
    if (filled == 0) invalid("pages[{}] = {} holds no KV yet", i, pages[i]);
    float* hi = static_cast<float*>(kmax.data) + i * row;
    float* lo = static_cast<float*>(kmin.data) + i * row;
    const float* first = k + static_cast<int64_t>(pages[i]) * kv.block_size * row;
    std::copy(first, first + row, hi);
    std::copy(first, first + row, lo);
    for (int64_t slot = 1; slot < filled; ++slot)
      for (int64_t j = 0; j < row; ++j) {
        hi[j] = std::max(hi[j], first[slot * row + j]);
        lo[j] = std::min(lo[j], first[slot * row + j]);
      }
  }
  return DRIFT_OK;
}

}  // namespace drift
