#pragma once
// PageBlockIndex: which block of a sequence's block table holds a page. Page ids are indices into
// the KV pool, so the index is a dense array over the table's [min, max] page range: built in one
// pass, looked up without hashing (SpecPV's views check 256 lists of ~270 pages a step at 32K).
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace drift {

class PageBlockIndex {
 public:
  explicit PageBlockIndex(std::span<const int32_t> table) {
    if (table.empty()) return;
    const auto [lo, hi] = std::minmax_element(table.begin(), table.end());
    lo_ = *lo;
    block_.assign(static_cast<size_t>(*hi - *lo + 1), -1);
    for (size_t b = 0; b < table.size(); ++b) {
      int32_t& slot = block_[static_cast<size_t>(table[b] - lo_)];
      if (slot < 0) slot = static_cast<int32_t>(b);  // a repeated page: its first block
    }
  }
  // The block holding `page`, or -1 when the table does not list it.
  int64_t block_of(int32_t page) const {
    const int64_t i = static_cast<int64_t>(page) - lo_;
    return i < 0 || i >= static_cast<int64_t>(block_.size()) ? -1 : block_[static_cast<size_t>(i)];
  }

 private:
  int32_t lo_ = 0;
  std::vector<int32_t> block_;
};

}  // namespace drift
