#include "draft_cache.h"

#include <algorithm>

namespace eagle3 {

void DraftCache::restart(int64_t position) {
  start_ = position;
  length_ = 0;
}

void DraftCache::reserve(int64_t rows) {
  const int64_t needed = length_ + rows;
  const int64_t capacity = k_.empty() ? 0 : k_->shape[0];
  if (needed <= capacity) return;
  const int64_t grown = std::max<int64_t>({needed, 2 * capacity, 64});
  Tensor k = host_.alloc(host_.activation_dtype(), {grown, kv_heads_, head_dim_});
  Tensor v = host_.alloc(host_.activation_dtype(), {grown, kv_heads_, head_dim_});
  if (capacity > 0) {  // every row, the current tree's scratch rows included
    host_.copy(k_.get(), eagle3::rows(k.get(), 0, capacity));
    host_.copy(v_.get(), eagle3::rows(v.get(), 0, capacity));
  }
  k_ = std::move(k);
  v_ = std::move(v);
}

}  // namespace eagle3
