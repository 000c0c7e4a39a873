#include "core/kv_window_pages.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/error.h"

namespace drift {

WindowPages::WindowPages(int64_t num_pages, int64_t block_size, int64_t window)
    : num_pages_(num_pages), block_size_(block_size), window_(window) {
  if (block_size <= 0) fail("WindowPages: block_size must be positive, got {}", block_size);
  if (window <= 0) fail("WindowPages: window must be positive, got {}", window);
  if (num_pages <= 0 || num_pages > std::numeric_limits<PageId>::max() / block_size)
    fail("WindowPages: num_pages must be in [1, {}], got {}", std::numeric_limits<PageId>::max() / block_size,
         num_pages);
  refs_.assign(num_pages, 0);
  retains_.assign(num_pages, 0);
  for (int64_t p = num_pages - 1; p >= 0; --p) free_list_.push_back(static_cast<PageId>(p));
}

int64_t WindowPages::pages_to_never_run_short(int64_t window, int64_t block_size, int64_t max_sequences,
                                              int64_t max_step_tokens) {
  // Between steps a sequence holds the blocks of [computed - window + 1 - block_size, computed):
  // window - 1 + block_size positions, one more block when they start mid-block.
  const int64_t at_rest = (window - 1 + block_size + block_size - 1) / block_size + 1;
  // A pinned prompt end: window - 1 positions.
  const int64_t pinned = (window - 1 + block_size - 1) / block_size + 1;
  // A step's chunk of n positions adds at most ceil(n / block_size) + 1 blocks, and one more
  // while a shared block is copied; the chunks of a step hold at most max_step_tokens positions.
  const int64_t per_step = (max_step_tokens + block_size - 1) / block_size;
  return max_sequences * (at_rest + pinned + 3) + per_step;
}

WindowPages::Sequence& WindowPages::sequence(SeqHandle seq, const char* op) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("WindowPages::{}: unknown sequence handle {}", op, seq);
  return it->second;
}
const WindowPages::Sequence& WindowPages::sequence(SeqHandle seq, const char* op) const {
  return const_cast<WindowPages*>(this)->sequence(seq, op);
}

PageId WindowPages::allocate(SeqHandle seq) {
  while (free_list_.empty() && reclaimer_ && reclaimer_()) {
  }
  if (free_list_.empty())
    fail(
        "KV cache: the sliding-window layers' {} pages are exhausted (sequence {}); their pool is sized so this "
        "cannot happen, so this is a bug",
        num_pages_, seq);
  const PageId page = free_list_.back();
  free_list_.pop_back();
  refs_[page] = 1;
  return page;
}

void WindowPages::decref(PageId page) {
  DRIFT_CHECK(refs_[page] > 0, "WindowPages: decref of free page {}", page);
  if (--refs_[page] == 0) free_list_.push_back(page);
}

void WindowPages::release_before(Sequence& s, int64_t first_block) {
  // Each step scans only the blocks the window passed since the last: a long context costs nothing.
  const int64_t end = std::min<int64_t>(first_block, static_cast<int64_t>(s.pages.size()));
  for (int64_t b = s.released_below; b < end; ++b)
    if (s.pages[b] >= 0 && (b < s.pinned_first || b >= s.pinned_end)) decref(std::exchange(s.pages[b], -1));
  s.released_below = std::max(s.released_below, end);
}

void WindowPages::add(SeqHandle seq) {
  DRIFT_CHECK(seqs_.emplace(seq, Sequence{}).second, "WindowPages: sequence {} added twice", seq);
}

void WindowPages::fork(SeqHandle src, SeqHandle dst) {
  Sequence copy = sequence(src, "fork");
  for (PageId page : copy.pages)
    if (page >= 0) ++refs_[page];
  DRIFT_CHECK(seqs_.emplace(dst, std::move(copy)).second, "WindowPages: sequence {} added twice", dst);
}

void WindowPages::remove(SeqHandle seq) {
  std::vector<PageId>& pages = sequence(seq, "remove").pages;
  // Last block first, as KVCacheManager frees: the LIFO free list hands them out in order again.
  for (auto it = pages.rbegin(); it != pages.rend(); ++it)
    if (*it >= 0) decref(*it);
  seqs_.erase(seq);
}

void WindowPages::truncate(SeqHandle seq, int64_t length) {
  Sequence& s = sequence(seq, "truncate");
  std::vector<PageId>& pages = s.pages;
  while (static_cast<int64_t>(pages.size()) > blocks_for(length)) {
    if (pages.back() >= 0) decref(pages.back());
    pages.pop_back();
  }
  s.released_below = std::min<int64_t>(s.released_below, static_cast<int64_t>(pages.size()));
}

void WindowPages::move(SeqHandle seq, std::span<const int64_t> from, std::span<const int64_t> to) {
  std::vector<int64_t> src, dst;
  for (size_t i = 0; i < from.size(); ++i) {
    src.push_back(slot(seq, from[i]));
    dst.push_back(slot(seq, to[i]));
  }
  if (!src.empty() && slot_mover_) slot_mover_(src, dst);
}

bool WindowPages::share_prefix(SeqHandle src, SeqHandle dst, int64_t tokens) {
  const std::vector<PageId>& from = sequence(src, "share_prefix").pages;
  Sequence& into = sequence(dst, "share_prefix");
  std::vector<PageId>& to = into.pages;
  DRIFT_CHECK(to.empty(), "WindowPages::share_prefix: sequence {} is not empty", dst);
  const int64_t first = std::max<int64_t>(0, tokens - window_ + 1) / block_size_;
  const int64_t end = blocks_for(tokens);
  if (static_cast<int64_t>(from.size()) < end) return false;
  for (int64_t b = first; b < end; ++b)
    if (from[b] < 0) return false;
  to.assign(end, -1);
  into.released_below = first;
  for (int64_t b = first; b < end; ++b) {
    to[b] = from[b];
    ++refs_[to[b]];
  }
  return true;
}

void WindowPages::prepare_write(SeqHandle seq, int64_t start, int64_t end) {
  Sequence& s = sequence(seq, "prepare_write");
  std::vector<PageId>& pages = s.pages;
  DRIFT_CHECK(start >= 0 && start <= end, "WindowPages::prepare_write: bad range [{}, {})", start, end);
  const int64_t first_seen = std::max<int64_t>(0, start - window_ + 1);
  // The same slack block as release_passed: whatever the chunking, the blocks that positions from
  // the prompt's last full block on read are still held when the prompt's pages are offered.
  release_before(s, std::max<int64_t>(0, first_seen - block_size_) / block_size_);
  // The queries' window reaches back to first_seen: those blocks were written by earlier steps.
  for (int64_t b = first_seen / block_size_; b * block_size_ < start; ++b)
    if (b >= static_cast<int64_t>(pages.size()) || pages[b] < 0)
      fail("KV cache: sequence {}'s sliding-window KV of positions [{}, {}) is gone; positions from {} need it", seq,
           b * block_size_, (b + 1) * block_size_, start);
  if (static_cast<int64_t>(pages.size()) < blocks_for(end)) pages.resize(blocks_for(end), -1);
  for (int64_t b = start / block_size_; b < blocks_for(end); ++b) {
    if (pages[b] < 0) {
      pages[b] = allocate(seq);
    } else if (refs_[pages[b]] > 1) {  // shared with a fork or a sibling: copy before writing
      const PageId copy = allocate(seq);
      if (copier_) copier_(pages[b], copy);
      decref(std::exchange(pages[b], copy));
    }
  }
}

void WindowPages::release_passed(SeqHandle seq, int64_t computed) {
  const int64_t keep_from = std::max<int64_t>(0, computed - window_ + 1 - block_size_);
  release_before(sequence(seq, "release_passed"), keep_from / block_size_);
}

void WindowPages::pin_prefix_end(SeqHandle seq, int64_t tokens) {
  Sequence& s = sequence(seq, "pin_prefix_end");
  s.pinned_first = std::max<int64_t>(0, tokens - window_ + 1) / block_size_;
  s.pinned_end = blocks_for(tokens);
}

void WindowPages::retain(PageId page) {
  DRIFT_CHECK(page >= 0 && page < num_pages_ && refs_[page] > 0, "WindowPages::retain: page {} is not in use", page);
  ++refs_[page];
  ++retains_[page];
}

void WindowPages::release(PageId page) {
  DRIFT_CHECK(page >= 0 && page < num_pages_ && retains_[page] > 0, "WindowPages::release: page {} is not retained",
              page);
  --retains_[page];
  decref(page);
}

PageId WindowPages::page_of(SeqHandle seq, int64_t block) const {
  const std::vector<PageId>& pages = sequence(seq, "page_of").pages;
  return block >= 0 && block < static_cast<int64_t>(pages.size()) ? pages[block] : -1;
}

void WindowPages::adopt(SeqHandle seq, int64_t blocks, int64_t first, std::span<const PageId> pages) {
  Sequence& s = sequence(seq, "adopt");
  std::vector<PageId>& table = s.pages;
  DRIFT_CHECK(table.empty() && first >= 0 && first + static_cast<int64_t>(pages.size()) <= blocks,
              "WindowPages::adopt: sequence {} is not empty or blocks [{}, {}) lie outside its {}", seq, first,
              first + static_cast<int64_t>(pages.size()), blocks);
  table.assign(blocks, -1);
  s.released_below = first;
  for (size_t i = 0; i < pages.size(); ++i) {
    DRIFT_CHECK(refs_[pages[i]] > 0, "WindowPages::adopt: page {} is free", pages[i]);
    ++refs_[pages[i]];
    table[first + static_cast<int64_t>(i)] = pages[i];
  }
}

int64_t WindowPages::slot(SeqHandle seq, int64_t pos) const {
  const std::vector<PageId>& pages = sequence(seq, "slot").pages;
  const int64_t b = pos / block_size_;
  if (pos < 0 || b >= static_cast<int64_t>(pages.size()) || pages[b] < 0)
    fail("WindowPages::slot: sequence {} holds no sliding-window page for position {}", seq, pos);
  return static_cast<int64_t>(pages[b]) * block_size_ + pos % block_size_;
}

const std::vector<PageId>& WindowPages::block_table(SeqHandle seq) const { return sequence(seq, "block_table").pages; }

int64_t WindowPages::pages_held(SeqHandle seq) const {
  const std::vector<PageId>& pages = sequence(seq, "pages_held").pages;
  return std::count_if(pages.begin(), pages.end(), [](PageId p) { return p >= 0; });
}

int64_t WindowPages::pages_in_sequences() const {
  int64_t n = 0;
  for (int64_t p = 0; p < num_pages_; ++p) n += refs_[p] > retains_[p] ? 1 : 0;
  return n;
}

int64_t WindowPages::retains(PageId page) const {
  DRIFT_CHECK(page >= 0 && page < num_pages_, "WindowPages::retains: page {} out of range", page);
  return retains_[page];
}

void WindowPages::check_integrity(const std::function<int64_t(SeqHandle)>& length_of) const {
  std::vector<int64_t> named(num_pages_, 0);
  for (const auto& [seq, s] : seqs_) {
    const std::vector<PageId>& pages = s.pages;
    if (s.pinned_first < 0 || s.pinned_first > s.pinned_end)
      fail("KVCacheManager integrity: sequence {} pins sliding-window blocks [{}, {})", seq, s.pinned_first,
           s.pinned_end);
    if (static_cast<int64_t>(pages.size()) > blocks_for(length_of(seq)))
      fail("KVCacheManager integrity: sequence {} holds {} sliding-window blocks, its length {} needs at most {}", seq,
           pages.size(), length_of(seq), blocks_for(length_of(seq)));
    for (PageId page : pages) {
      if (page < -1 || page >= num_pages_)
        fail("KVCacheManager integrity: sequence {} names sliding-window page {} out of range", seq, page);
      if (page >= 0) ++named[page];
    }
  }
  std::vector<bool> on_list(num_pages_, false);
  for (PageId page : free_list_) {
    if (page < 0 || page >= num_pages_ || on_list[page] || refs_[page] != 0)
      fail("KVCacheManager integrity: sliding-window free list entry {} is out of range, repeated or in use", page);
    on_list[page] = true;
  }
  for (int64_t p = 0; p < num_pages_; ++p) {
    if (retains_[p] < 0 || refs_[p] != named[p] + retains_[p])
      fail(
          "KVCacheManager integrity: sliding-window page {} has ref count {} but {} block-table entries and {} retains",
          p, refs_[p], named[p], retains_[p]);
    if (refs_[p] == 0 && !on_list[p])
      fail("KVCacheManager integrity: sliding-window page {} has ref count 0 but is not on the free list", p);
  }
}

}  // namespace drift
