#pragma once
// KVCacheManager's state (internal; not part of the public API). In its own header so that the
// integrity tests' peer class (a friend of KVCacheManager) can corrupt it on purpose and prove
// check_integrity() catches each kind of damage.
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/kv_cache_manager.h"

namespace drift {

struct KVCacheManager::SeqState {
  std::vector<PageId> pages;  // block table: page of token positions [i*bs, (i+1)*bs)
  int64_t length = 0;         // tokens; pages.size() == pages_for_tokens(length) always
};

struct KVCacheManager::Impl {
  int64_t num_pages = 0;
  int64_t block_size = 0;
  std::vector<int32_t> refs;      // total references: block-table entries + external retains
  std::vector<int32_t> retains;   // the external (retain_page) part of refs
  std::vector<PageId> free_list;  // stack of pages with refs == 0; back() is allocated next
  std::map<SeqHandle, SeqState> seqs;  // ordered so integrity errors name the same seq each run
  SeqHandle next_handle = 0;
  PageCopier copier;
  SlotMover slot_mover;
  std::unique_ptr<WindowPages> window;  // the sliding-window layers' group, when enabled
  // A retained page's window block (keep_window_of), in the order they were kept: the oldest go
  // first when the window group runs short.
  struct Companion {
    PageId window_page;
    std::list<PageId>::iterator in_order;
  };
  std::map<PageId, Companion> companions;
  std::list<PageId> companion_order;

  void release_companion(PageId page) {
    auto it = companions.find(page);
    if (it == companions.end()) return;
    window->release(it->second.window_page);
    companion_order.erase(it->second.in_order);
    companions.erase(it);
  }
  // Drops the oldest companion; false when none is left.
  bool drop_oldest_companion() {
    if (companion_order.empty()) return false;
    release_companion(companion_order.front());
    return true;
  }

  // Rounded-up division written so that no count near INT64_MAX can overflow.
  int64_t pages_for_tokens(int64_t tokens) const {
    return tokens / block_size + (tokens % block_size != 0 ? 1 : 0);
  }

  SeqState& seq(SeqHandle handle, const char* op) {
    auto it = seqs.find(handle);
    if (it == seqs.end()) fail("KVCacheManager::{}: unknown sequence handle {}", op, handle);
    return it->second;
  }
  const SeqState& seq(SeqHandle handle, const char* op) const {
    return const_cast<Impl*>(this)->seq(handle, op);
  }

  void check_page_id(PageId page, const char* op) const {
    if (page < 0 || page >= num_pages)
      fail("KVCacheManager::{}: page id {} out of range [0, {})", op, page, num_pages);
  }

  void check_position(const SeqState& s, SeqHandle handle, int64_t pos, const char* op) const {
    if (pos < 0 || pos >= s.length)
      fail("KVCacheManager::{}: position {} out of range for sequence {} of length {}", op, pos,
           handle, s.length);
  }

  SeqHandle new_handle() {
    if (next_handle == std::numeric_limits<SeqHandle>::max())
      fail("KVCacheManager: sequence handles exhausted");
    return next_handle++;
  }

  void incref(PageId page) {
    DRIFT_CHECK(refs[page] > 0, "incref of free page {}", page);
    DRIFT_CHECK(refs[page] < std::numeric_limits<int32_t>::max(), "ref count of page {} overflows",
                page);
    ++refs[page];
  }

  void decref(PageId page) {
    DRIFT_CHECK(refs[page] > 0, "decref of free page {}", page);
    if (--refs[page] == 0) free_list.push_back(page);
  }

  PageId allocate() {
    DRIFT_CHECK(!free_list.empty(), "allocate with an empty free list");
    PageId page = free_list.back();
    free_list.pop_back();
    refs[page] = 1;
    return page;
  }

  // Copy-on-write of block-table entry `index`. The copier runs before any bookkeeping changes,
  // so a copier that throws leaves the manager exactly as it was. Caller ensures a free page.
  void copy_on_write(SeqState& s, size_t index) {
    PageId src = s.pages[index];
    PageId dst = free_list.back();
    if (copier) copier(src, dst);
    allocate();
    decref(src);
    s.pages[index] = dst;
  }

  bool last_page_needs_copy(const SeqState& s) const {
    return s.length % block_size != 0 && refs[s.pages.back()] > 1;
  }

  // Computed from the slack in the last page so that no `length + n` can overflow.
  int64_t pages_needed(const SeqState& s, int64_t n) const {
    if (n == 0) return 0;
    int64_t slack = static_cast<int64_t>(s.pages.size()) * block_size - s.length;
    int64_t grow = n <= slack ? 0 : pages_for_tokens(n - slack);
    return grow + (last_page_needs_copy(s) ? 1 : 0);
  }

  void check_sequence(SeqHandle handle, const SeqState& s, std::vector<int64_t>& occurrences,
                      std::vector<SeqHandle>& seen_in) const;
  void check_free_list() const;
};

}  // namespace drift
