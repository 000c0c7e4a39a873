#include "draft_cache.h"

#include <algorithm>

namespace eagle3 {

DraftKvPool::DraftKvPool(const Host& host, int64_t pages, int64_t block_size, int64_t kv_heads, int64_t head_dim)
    : host_(host),
      block_size_(block_size),
      k_(host.alloc(host.activation_dtype(), {pages * block_size, kv_heads, head_dim})),
      v_(host.alloc(host.activation_dtype(), {pages * block_size, kv_heads, head_dim})) {
  for (int64_t p = pages - 1; p >= 0; --p) free_.push_back(static_cast<int32_t>(p));
}

std::optional<int32_t> DraftKvPool::take() {
  if (free_.empty()) return std::nullopt;
  const int32_t page = free_.back();
  free_.pop_back();
  return page;
}

DraftCache::~DraftCache() {
  for (int32_t page : pages_) pool_.give(page);
}

void DraftCache::restart(int64_t position) {
  start_ = position;
  length_ = 0;
}

bool DraftCache::reserve(int64_t rows) {
  const int64_t block = pool_.block_size();
  const int64_t needed = (length_ + rows + block - 1) / block - static_cast<int64_t>(pages_.size());
  if (needed <= 0) return true;
  if (needed > pool_.free_pages()) return false;
  for (int64_t i = 0; i < needed; ++i) pages_.push_back(*pool_.take());
  return true;
}

void DraftCache::write(int64_t first, const drift_tensor_t& k, const drift_tensor_t& v) const {
  const int64_t block = pool_.block_size(), count = k.shape[0];
  // One copy per run of consecutive pool pages the rows fall in (a pool hands pages out in order,
  // so a long prefill window is usually one copy, not one a page: each is a device copy on CUDA).
  for (int64_t done = 0; done < count;) {
    const int64_t row = first + done, within = row % block;
    const auto first_page = static_cast<size_t>(row / block);
    int64_t n = std::min(count - done, block - within);
    for (size_t page = first_page; done + n < count && pages_.at(page + 1) == pages_[page] + 1; ++page)
      n = std::min(count - done, n + block);
    const int64_t slot = static_cast<int64_t>(pages_.at(first_page)) * block + within;
    pool_.host().copy(rows(k, done, n), rows(pool_.keys(), slot, n));
    pool_.host().copy(rows(v, done, n), rows(pool_.values(), slot, n));
    done += n;
  }
}

void DraftCache::attend_over(int64_t rows, drift_attention_args_t& args) const {
  args.k = &pool_.keys();
  args.v = &pool_.values();
  args.kv_pages = pages_.data();
  args.num_kv_pages = static_cast<int32_t>(pages_.size());
  args.kv_block_size = static_cast<int32_t>(pool_.block_size());
  args.kv_len = rows;
}

}  // namespace eagle3
