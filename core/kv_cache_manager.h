#pragma once
// KVCacheManager: the bookkeeping of the paged KV cache (no tensor data lives here).
// A fixed pool of pages (`block_size` token slots each) with reference counts; each sequence
// owns a block table (page ids in order) and a length in tokens. Pages may be shared between
// sequences (fork, prefix cache); a shared page is copied before it is written (copy-on-write,
// through the PageCopier the storage owner installs). `check_integrity()` verifies every
// invariant and is cheap enough to run after every engine step in tests.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/kv_window_pages.h"

namespace drift {

class KVCacheManager {
 public:
  // Copies the KV contents of page `src` into page `dst` (all layers). Installed by the owner of
  // the KV tensors; without one, copy-on-write only does the bookkeeping (tests).
  using PageCopier = std::function<void(PageId src, PageId dst)>;
  // Moves the KV contents of global slot src[i] to dst[i] for every i, in order (all layers).
  // Installed by the owner of the KV tensors, like the PageCopier; compaction needs it.
  using SlotMover = std::function<void(std::span<const int64_t> src, std::span<const int64_t> dst)>;

  KVCacheManager(int64_t num_pages, int64_t block_size);

  int64_t num_pages() const;
  int64_t block_size() const;
  int64_t num_free_pages() const;
  int64_t pages_for_tokens(int64_t tokens) const;
  void set_page_copier(PageCopier copier);
  void set_slot_mover(SlotMover mover);

  // A new, empty sequence.
  SeqHandle create_sequence();
  // Pages `append(seq, n)` would need to take from the free list (including copy-on-write of a
  // shared, partially filled last page).
  int64_t pages_needed_to_append(SeqHandle seq, int64_t n) const;
  // Grows the sequence by n token slots, allocating pages as needed; returns false (and changes
  // nothing) when the free list is too short. A shared last page that would be written is
  // copied first (copy-on-write).
  bool append(SeqHandle seq, int64_t n);
  // Global slot index (page * block_size + offset) of token position `pos` of the sequence.
  int64_t slot(SeqHandle seq, int64_t pos) const;
  // Shrinks the sequence by n tokens; pages left empty are released (returned to the free list
  // when no other sequence references them).
  void rewind(SeqHandle seq, int64_t n);
  // Speculation's commit: of the positions from `first` on (a verified draft tree's tail), keeps
  // only `kept` (ascending, each in [first, length)): their KV moves to first, first + 1, ...
  // and the sequence shrinks to first + kept.size() (rewind; emptied tail pages released).
  // The tail is the sequence's own (append copied any shared page), so moves never touch a
  // page another sequence or a cache holds.
  void compact(SeqHandle seq, int64_t first, std::span<const int64_t> kept);
  // A new sequence sharing all of `src`'s pages (reference counts incremented) and its length.
  SeqHandle fork(SeqHandle src);
  // Makes the page holding position `pos` exclusively owned by `seq` (copy-on-write if shared).
  // Returns false when a copy is needed and no page is free.
  bool make_writable(SeqHandle seq, int64_t pos);
  // Releases all pages of the sequence and forgets it.
  void free(SeqHandle seq);

  // Adopts existing pages (e.g. prefix-cache hits) as the leading full pages of an EMPTY
  // sequence: reference counts incremented, length becomes (adopted pages) * block_size. Returns
  // how many it adopted: all, or with a window group the longest prefix whose window blocks were
  // kept with the pages (keep_window_of), which may be none.
  int64_t adopt_pages(SeqHandle seq, std::span<const PageId> pages);
  // An EMPTY sequence takes `src`'s first `pages` pages, as adopt_pages, and with a window group
  // also `src`'s window blocks for them (a parallel sample sharing its sibling's prompt). False,
  // changing nothing, when `src` no longer holds that window.
  bool share_prefix(SeqHandle seq, SeqHandle src, int64_t pages);

  // The sliding-window layers' page group (kv_window_pages.h), enabled before any sequence
  // exists; every sequence operation above is mirrored into it. nullptr while off.
  void enable_window_pages(int64_t num_pages, int64_t window);
  WindowPages* window_pages();
  const WindowPages* window_pages() const;
  // Extra references held outside any sequence (a cache manager keeping a page alive).
  void retain_page(PageId page);
  void release_page(PageId page);
  // With a window group: while `page` stays retained, `seq`'s window block `block` (the same
  // positions) is kept with it, if the sequence still holds it, so the page can end an adopted
  // prefix. Kept blocks are dropped, oldest first, when the window group runs short.
  void keep_window_of(PageId page, SeqHandle seq, int64_t block);
  int32_t ref_count(PageId page) const;

  int64_t length(SeqHandle seq) const;
  const std::vector<PageId>& block_table(SeqHandle seq) const;
  bool has_sequence(SeqHandle seq) const;
  int64_t num_sequences() const;

  // Throws DriftError describing the first violated invariant: every page's reference count
  // equals the number of block-table entries plus external retains that name it; free pages
  // have count 0 and appear once in the free list; no sequence has more pages than its length
  // needs; the free list and used pages partition the pool.
  void check_integrity() const;

 private:
  int64_t adoptable_with_window(std::span<const PageId> pages) const;
  friend class KVCacheManagerTestPeer;  // tests: corrupts the state to prove check_integrity fails
  struct SeqState;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace drift
