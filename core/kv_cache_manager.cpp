#include "core/kv_cache_manager.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "core/error.h"
#include "core/kv_cache_manager_state.h"

// Allocation order: the free list is a LIFO stack. A fresh pool hands out page ids in ascending
// order (0, 1, 2, ...); afterwards the most recently freed page is reused first. Deterministic,
// O(1), and a just-freed page is the one most likely still warm in caches.
//
// Sequence handles are never reused (a monotonically increasing counter), so a stale handle kept
// after free() is reported as unknown instead of silently aliasing a newer sequence.

namespace drift {

KVCacheManager::KVCacheManager(int64_t num_pages, int64_t block_size)
    : impl_(std::make_shared<Impl>()) {
  if (block_size <= 0) fail("KVCacheManager: block_size must be positive, got {}", block_size);
  if (num_pages <= 0 || num_pages > std::numeric_limits<PageId>::max())
    fail("KVCacheManager: num_pages must be in [1, {}], got {}",
         std::numeric_limits<PageId>::max(), num_pages);
  // Global slot indices (page * block_size + offset) must fit in int64_t.
  if (num_pages > std::numeric_limits<int64_t>::max() / block_size)
    fail("KVCacheManager: {} pages of {} tokens overflow the slot index", num_pages, block_size);
  Impl& m = *impl_;
  m.num_pages = num_pages;
  m.block_size = block_size;
  m.refs.assign(num_pages, 0);
  m.retains.assign(num_pages, 0);
  m.free_list.reserve(num_pages);
  // Pushed in descending order so that a fresh pool pops page 0 first.
  for (int64_t p = num_pages - 1; p >= 0; --p) m.free_list.push_back(static_cast<PageId>(p));
}

int64_t KVCacheManager::num_pages() const { return impl_->num_pages; }
int64_t KVCacheManager::block_size() const { return impl_->block_size; }
int64_t KVCacheManager::num_free_pages() const {
  return static_cast<int64_t>(impl_->free_list.size());
}

int64_t KVCacheManager::pages_for_tokens(int64_t tokens) const {
  if (tokens < 0) fail("KVCacheManager::pages_for_tokens: negative token count {}", tokens);
  return impl_->pages_for_tokens(tokens);
}

void KVCacheManager::set_page_copier(PageCopier copier) { impl_->copier = std::move(copier); }
void KVCacheManager::set_slot_mover(SlotMover mover) { impl_->slot_mover = std::move(mover); }

SeqHandle KVCacheManager::create_sequence() {
  SeqHandle handle = impl_->new_handle();
  impl_->seqs.emplace(handle, SeqState{});
  if (impl_->window) impl_->window->add(handle);
  return handle;
}

void KVCacheManager::enable_window_pages(int64_t num_pages, int64_t window) {
  DRIFT_CHECK(impl_->seqs.empty() && !impl_->window, "window pages are enabled once, before any sequence");
  impl_->window = std::make_unique<WindowPages>(num_pages, impl_->block_size, window);
  impl_->window->set_reclaimer([m = impl_.get()] { return m->drop_oldest_companion(); });
}
WindowPages* KVCacheManager::window_pages() { return impl_->window.get(); }
const WindowPages* KVCacheManager::window_pages() const { return impl_->window.get(); }

int64_t KVCacheManager::pages_needed_to_append(SeqHandle seq, int64_t n) const {
  const SeqState& s = impl_->seq(seq, "pages_needed_to_append");
  if (n < 0)
    fail("KVCacheManager::pages_needed_to_append: negative count {} for sequence {}", n, seq);
  return impl_->pages_needed(s, n);
}

bool KVCacheManager::append(SeqHandle seq, int64_t n) {
  Impl& m = *impl_;
  SeqState& s = m.seq(seq, "append");
  if (n < 0) fail("KVCacheManager::append: negative count {} for sequence {}", n, seq);
  if (n == 0) return true;  // no slot is handed out, so not even a shared last page is copied
  // Checking the exact need up front is what makes append all-or-nothing.
  if (m.pages_needed(s, n) > num_free_pages()) return false;
  if (m.last_page_needs_copy(s)) m.copy_on_write(s, s.pages.size() - 1);
  s.length += n;
  while (static_cast<int64_t>(s.pages.size()) < m.pages_for_tokens(s.length))
    s.pages.push_back(m.allocate());
  return true;
}

int64_t KVCacheManager::slot(SeqHandle seq, int64_t pos) const {
  const SeqState& s = impl_->seq(seq, "slot");
  impl_->check_position(s, seq, pos, "slot");
  int64_t bs = impl_->block_size;
  return static_cast<int64_t>(s.pages[pos / bs]) * bs + pos % bs;
}

void KVCacheManager::rewind(SeqHandle seq, int64_t n) {
  Impl& m = *impl_;
  SeqState& s = m.seq(seq, "rewind");
  if (n < 0 || n > s.length)
    fail("KVCacheManager::rewind: cannot rewind {} tokens of sequence {} with length {}", n, seq,
         s.length);
  s.length -= n;
  // A page that becomes partially filled stays shared if it was; the next write copies it.
  while (static_cast<int64_t>(s.pages.size()) > m.pages_for_tokens(s.length)) {
    m.decref(s.pages.back());
    s.pages.pop_back();
  }
  if (m.window) m.window->truncate(seq, s.length);
}

void KVCacheManager::compact(SeqHandle seq, int64_t first, std::span<const int64_t> kept) {
  const SeqState& s = impl_->seq(seq, "compact");
  if (first < 0 || first > s.length || static_cast<int64_t>(kept.size()) > s.length - first)
    fail("KVCacheManager::compact: cannot keep {} positions from {} of sequence {} with length {}", kept.size(),
         first, seq, s.length);
  std::vector<int64_t> src, dst, from_positions, to_positions;
  for (size_t i = 0; i < kept.size(); ++i) {
    const int64_t from = kept[i], to = first + static_cast<int64_t>(i);
    if (from < to || from >= s.length || (i > 0 && from <= kept[i - 1]))
      fail("KVCacheManager::compact: kept positions of sequence {} must ascend within [{}, {}), got {} at index {}",
           seq, first, s.length, from, i);
    if (from == to) continue;
    src.push_back(slot(seq, from));
    dst.push_back(slot(seq, to));
    from_positions.push_back(from);
    to_positions.push_back(to);
  }
  // Ascending positions with from >= to: each move reads a slot no earlier move has written.
  if (!src.empty() && impl_->slot_mover) impl_->slot_mover(src, dst);
  if (impl_->window) impl_->window->move(seq, from_positions, to_positions);
  rewind(seq, s.length - first - static_cast<int64_t>(kept.size()));
}

SeqHandle KVCacheManager::fork(SeqHandle src) {
  Impl& m = *impl_;
  SeqState copy = m.seq(src, "fork");
  SeqHandle handle = m.new_handle();
  for (PageId page : copy.pages) m.incref(page);
  m.seqs.emplace(handle, std::move(copy));
  if (m.window) m.window->fork(src, handle);
  return handle;
}

bool KVCacheManager::make_writable(SeqHandle seq, int64_t pos) {
  Impl& m = *impl_;
  SeqState& s = m.seq(seq, "make_writable");
  m.check_position(s, seq, pos, "make_writable");
  size_t index = static_cast<size_t>(pos / m.block_size);
  if (m.refs[s.pages[index]] == 1) return true;
  if (m.free_list.empty()) return false;
  m.copy_on_write(s, index);
  return true;
}

void KVCacheManager::free(SeqHandle seq) {
  Impl& m = *impl_;
  SeqState& s = m.seq(seq, "free");
  // Last page first: the LIFO free list then hands out the same pages in the same order again.
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it) m.decref(*it);
  m.seqs.erase(seq);
  if (m.window) m.window->remove(seq);
}

// With a window group: the most leading pages whose last window blocks all have kept companions.
int64_t KVCacheManager::adoptable_with_window(std::span<const PageId> pages) const {
  const Impl& m = *impl_;
  for (auto n = static_cast<int64_t>(pages.size()); n > 0; --n) {
    const int64_t first = std::max<int64_t>(0, n * m.block_size - m.window->window() + 1) / m.block_size;
    bool kept = true;
    for (int64_t b = first; b < n && kept; ++b) kept = m.companions.count(pages[b]) > 0;
    if (kept) return n;
  }
  return 0;
}

int64_t KVCacheManager::adopt_pages(SeqHandle seq, std::span<const PageId> all_pages) {
  Impl& m = *impl_;
  SeqState& s = m.seq(seq, "adopt_pages");
  if (s.length != 0)
    fail("KVCacheManager::adopt_pages: sequence {} is not empty (length {})", seq, s.length);
  const std::span<const PageId> pages = all_pages.first(m.window ? adoptable_with_window(all_pages) : all_pages.size());
  // Validate everything before touching a ref count, so a bad list changes nothing.
  std::vector<bool> listed(m.num_pages, false);
  for (PageId page : pages) {
    m.check_page_id(page, "adopt_pages");
    if (m.refs[page] == 0)
      fail("KVCacheManager::adopt_pages: page {} is free; only pages in use (retained) can be "
           "adopted into sequence {}",
           page, seq);
    if (listed[page])
      fail("KVCacheManager::adopt_pages: page {} listed twice for sequence {}", page, seq);
    listed[page] = true;
  }
  for (PageId page : pages) m.incref(page);
  s.pages.assign(pages.begin(), pages.end());
  s.length = static_cast<int64_t>(pages.size()) * m.block_size;
  if (m.window && !pages.empty()) {
    const auto blocks = static_cast<int64_t>(pages.size());
    const int64_t first = std::max<int64_t>(0, s.length - m.window->window() + 1) / m.block_size;
    std::vector<PageId> kept;
    for (int64_t b = first; b < blocks; ++b) kept.push_back(m.companions.at(pages[b]).window_page);
    m.window->adopt(seq, blocks, first, kept);
  }
  return static_cast<int64_t>(pages.size());
}

bool KVCacheManager::share_prefix(SeqHandle seq, SeqHandle src, int64_t pages) {
  Impl& m = *impl_;
  const std::vector<PageId>& table = m.seq(src, "share_prefix").pages;
  if (pages < 0 || pages > static_cast<int64_t>(table.size()))
    fail("KVCacheManager::share_prefix: sequence {} has {} pages, not {}", src, table.size(), pages);
  const std::vector<PageId> shared(table.begin(), table.begin() + pages);
  if (!m.window) {
    adopt_pages(seq, shared);
    return true;
  }
  if (m.seq(seq, "share_prefix").length != 0) fail("KVCacheManager::share_prefix: sequence {} is not empty", seq);
  if (!m.window->share_prefix(src, seq, pages * m.block_size)) return false;
  for (PageId page : shared) m.incref(page);
  SeqState& s = m.seq(seq, "share_prefix");
  s.pages = shared;
  s.length = pages * m.block_size;
  return true;
}

void KVCacheManager::retain_page(PageId page) {
  Impl& m = *impl_;
  m.check_page_id(page, "retain_page");
  // A free page has no contents worth keeping, and retaining it would hide it from the free list.
  if (m.refs[page] == 0) fail("KVCacheManager::retain_page: page {} is free", page);
  m.incref(page);
  ++m.retains[page];
}

void KVCacheManager::release_page(PageId page) {
  Impl& m = *impl_;
  m.check_page_id(page, "release_page");
  if (m.retains[page] == 0)
    fail("KVCacheManager::release_page: page {} holds no retain_page reference", page);
  --m.retains[page];
  m.decref(page);
  if (m.retains[page] == 0 && m.window) m.release_companion(page);
}

void KVCacheManager::keep_window_of(PageId page, SeqHandle seq, int64_t block) {
  Impl& m = *impl_;
  if (!m.window) return;
  m.check_page_id(page, "keep_window_of");
  if (m.retains[page] == 0) fail("KVCacheManager::keep_window_of: page {} is not retained", page);
  if (m.companions.count(page)) return;
  const PageId window_page = m.window->page_of(seq, block);
  if (window_page < 0) return;  // the window has passed it: the page can still start a prefix
  m.window->retain(window_page);
  m.companion_order.push_back(page);
  m.companions.emplace(page, Impl::Companion{window_page, std::prev(m.companion_order.end())});
}

int32_t KVCacheManager::ref_count(PageId page) const {
  impl_->check_page_id(page, "ref_count");
  return impl_->refs[page];
}

int64_t KVCacheManager::length(SeqHandle seq) const { return impl_->seq(seq, "length").length; }

const std::vector<PageId>& KVCacheManager::block_table(SeqHandle seq) const {
  return impl_->seq(seq, "block_table").pages;
}

bool KVCacheManager::has_sequence(SeqHandle seq) const { return impl_->seqs.contains(seq); }

int64_t KVCacheManager::num_sequences() const { return static_cast<int64_t>(impl_->seqs.size()); }

// Validates one block table and tallies its pages into `occurrences`; `seen_in[p]` remembers the
// last sequence that named page p, which catches a page listed twice in one table.
void KVCacheManager::Impl::check_sequence(SeqHandle handle, const SeqState& s,
                                          std::vector<int64_t>& occurrences,
                                          std::vector<SeqHandle>& seen_in) const {
  if (s.length < 0)
    fail("KVCacheManager integrity: sequence {} has negative length {}", handle, s.length);
  int64_t need = pages_for_tokens(s.length);
  if (static_cast<int64_t>(s.pages.size()) != need)
    fail("KVCacheManager integrity: sequence {} of length {} has {} pages, needs exactly {}",
         handle, s.length, s.pages.size(), need);
  for (PageId page : s.pages) {
    if (page < 0 || page >= num_pages)
      fail("KVCacheManager integrity: sequence {} names page id {} out of range", handle, page);
    if (seen_in[page] == handle)
      fail("KVCacheManager integrity: sequence {} names page {} twice", handle, page);
    seen_in[page] = handle;
    ++occurrences[page];
  }
}

void KVCacheManager::Impl::check_free_list() const {
  std::vector<bool> on_list(num_pages, false);
  for (PageId page : free_list) {
    if (page < 0 || page >= num_pages)
      fail("KVCacheManager integrity: free list holds page id {} out of range", page);
    if (on_list[page]) fail("KVCacheManager integrity: page {} is on the free list twice", page);
    if (refs[page] != 0)
      fail("KVCacheManager integrity: page {} is on the free list with ref count {}", page,
           refs[page]);
    on_list[page] = true;
  }
  // Every entry is a distinct page with count 0, so the free list and the used pages partition
  // the pool iff no count-0 page is missing from it.
  for (int64_t p = 0; p < num_pages; ++p)
    if (refs[p] == 0 && !on_list[p])
      fail("KVCacheManager integrity: page {} has ref count 0 but is not on the free list", p);
}

void KVCacheManager::check_integrity() const {
  const Impl& m = *impl_;
  std::vector<int64_t> occurrences(m.num_pages, 0);
  std::vector<SeqHandle> seen_in(m.num_pages, -1);
  for (const auto& [handle, s] : m.seqs) m.check_sequence(handle, s, occurrences, seen_in);
  for (int64_t p = 0; p < m.num_pages; ++p) {
    if (m.retains[p] < 0)
      fail("KVCacheManager integrity: page {} has negative retain count {}", p, m.retains[p]);
    if (m.refs[p] != occurrences[p] + m.retains[p])
      fail("KVCacheManager integrity: page {} has ref count {} but {} block-table entries and {} "
           "retains",
           p, m.refs[p], occurrences[p], m.retains[p]);
  }
  m.check_free_list();
  if (!m.window) return;
  // Both groups know the same sequences.
  if (m.window->num_sequences() != static_cast<int64_t>(m.seqs.size()))
    fail("KVCacheManager integrity: {} sequences, but the sliding-window group has {}", m.seqs.size(),
         m.window->num_sequences());
  for (const auto& [handle, s] : m.seqs)
    if (!m.window->has_sequence(handle))
      fail("KVCacheManager integrity: sequence {} is missing from the sliding-window group", handle);
  m.window->check_integrity([&](SeqHandle seq) { return m.seqs.at(seq).length; });
  // Every window retain is one retained page's companion.
  std::map<PageId, int64_t> kept;
  for (const auto& [page, companion] : m.companions) {
    if (m.retains[page] == 0)
      fail("KVCacheManager integrity: page {} keeps window block {} but is not retained", page, companion.window_page);
    ++kept[companion.window_page];
  }
  for (int64_t p = 0; p < m.window->num_pages(); ++p) {
    const auto it = kept.find(static_cast<PageId>(p));
    const int64_t expected = it == kept.end() ? 0 : it->second;
    if (m.window->retains(static_cast<PageId>(p)) != expected)
      fail("KVCacheManager integrity: sliding-window page {} has {} retains but {} pages keep it", p,
           m.window->retains(static_cast<PageId>(p)), expected);
  }
}

}  // namespace drift
