#pragma once
// DraftCache: one sequence's draft KV -- the head's own keys and values, one row per position
// the draft has processed. Rows [0, length) hold committed positions start .. start + length - 1
// (extended from the target's hidden states after each forward); rows past them are scratch for
// the draft tree being built this step, dropped by simply not counting them.
#include <cstdint>

#include "host.h"

namespace eagle3 {

class DraftCache {
 public:
  DraftCache(const Host& host, int64_t kv_heads, int64_t head_dim)
      : host_(host), kv_heads_(kv_heads), head_dim_(head_dim) {}

  int64_t start() const { return start_; }                   // position of row 0
  int64_t length() const { return length_; }                 // committed rows
  int64_t end_position() const { return start_ + length_; }  // the next committed position

  // Forget everything; the next committed row is `position` (a gap before it stays unseen).
  void restart(int64_t position);
  // Room for `rows` rows past the committed ones (grows the buffers, keeping all their rows).
  void reserve(int64_t rows);
  void commit(int64_t rows) { length_ += rows; }

  // Row views: [count, kv_heads, head_dim].
  drift_tensor_t keys(int64_t first, int64_t count) const { return rows(k_.get(), first, count); }
  drift_tensor_t values(int64_t first, int64_t count) const { return rows(v_.get(), first, count); }

 private:
  const Host& host_;
  int64_t kv_heads_, head_dim_;
  int64_t start_ = 0, length_ = 0;
  Tensor k_, v_;
};

}  // namespace eagle3
