#pragma once
// The draft head's own KV, in pages like the target's (ABI 1.4's paged attention over a plugin's
// K/V), so its memory is bounded and budgeted: DraftKvPool holds every sequence's K and V in
// pages of the engine's block size, sized at create by the memory plan (memory_plan.h); a
// DraftCache is one sequence's rows, in pages it takes from the pool as it grows and gives back
// when it goes.
//
// A DraftCache's rows [0, length) hold committed positions start .. start + length - 1 (extended
// from the target's hidden states after each forward); rows past them are scratch for the draft
// tree being built this step, dropped by simply not counting them.
#include <cstdint>
#include <optional>
#include <vector>

#include "host.h"

namespace eagle3 {

class DraftKvPool {
 public:
  DraftKvPool(const Host& host, int64_t pages, int64_t block_size, int64_t kv_heads, int64_t head_dim);

  const Host& host() const { return host_; }
  int64_t block_size() const { return block_size_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }
  // [pages * block_size, kv_heads, head_dim]
  const drift_tensor_t& keys() const { return k_.get(); }
  const drift_tensor_t& values() const { return v_.get(); }

  std::optional<int32_t> take();
  void give(int32_t page) { free_.push_back(page); }

 private:
  const Host& host_;
  int64_t block_size_;
  Tensor k_, v_;
  std::vector<int32_t> free_;  // the next page handed out is at the back
};

class DraftCache {
 public:
  explicit DraftCache(DraftKvPool& pool) : pool_(pool) {}
  ~DraftCache();  // its pages go back to the pool
  DraftCache(const DraftCache&) = delete;
  DraftCache& operator=(const DraftCache&) = delete;

  int64_t start() const { return start_; }                   // position of row 0
  int64_t length() const { return length_; }                 // committed rows
  int64_t end_position() const { return start_ + length_; }  // the next committed position

  // Forget everything; the next committed row is `position` (a gap before it stays unseen).
  void restart(int64_t position);
  // Room for `rows` rows past the committed ones: pages from the pool. False, taking nothing,
  // when the pool has too few.
  bool reserve(int64_t rows);
  void commit(int64_t rows) { length_ += rows; }

  // Writes rows first .. first + count - 1 (reserved) from k and v [count, kv_heads, head_dim].
  void write(int64_t first, const drift_tensor_t& k, const drift_tensor_t& v) const;
  // Points args at rows 0 .. rows - 1: the pool's K/V through this cache's pages.
  void attend_over(int64_t rows, drift_attention_args_t& args) const;

 private:
  DraftKvPool& pool_;
  std::vector<int32_t> pages_;
  int64_t start_ = 0, length_ = 0;
};

}  // namespace eagle3
