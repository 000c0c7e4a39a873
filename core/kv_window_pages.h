#pragma once
// WindowPages: the KV pages of a model's sliding-window layers (GPT-OSS's alternate layers), a
// page group beside the full-attention layers' pool (KVCacheManager). A windowed layer's query at
// position q reads only positions [q - window + 1, q], so a sequence holds only the blocks its next
// queries can still see: blocks are allocated when a forward first writes them and released once
// the window has passed them (vLLM's hybrid allocator does the same per layer type). A block
// table entry is a page id, or -1 for a block the sequence no longer (or never) holds.
//
// The pool is sized so that it cannot run short before the full layers' pool does
// (pages_to_never_run_short): every sequence holds at most the window plus one block of slack
// between steps, plus what one step writes. Running short anyway is an internal error.
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

namespace drift {

using SeqHandle = int32_t;
using PageId = int32_t;

class WindowPages {
 public:
  // The same roles as KVCacheManager's, for the windowed layers' KV tensors only.
  using PageCopier = std::function<void(PageId src, PageId dst)>;
  using SlotMover = std::function<void(std::span<const int64_t> src, std::span<const int64_t> dst)>;

  WindowPages(int64_t num_pages, int64_t block_size, int64_t window);

  // Pages enough for `max_sequences` sequences holding KV at once (each may pin its prompt's end)
  // and steps of up to `max_step_tokens` tokens (drafts included): what the engine sizes the
  // pool by.
  static int64_t pages_to_never_run_short(int64_t window, int64_t block_size, int64_t max_sequences,
                                          int64_t max_step_tokens);

  int64_t num_pages() const { return num_pages_; }
  int64_t num_free_pages() const { return static_cast<int64_t>(free_list_.size()); }
  int64_t window() const { return window_; }
  void set_page_copier(PageCopier copier) { copier_ = std::move(copier); }
  void set_slot_mover(SlotMover mover) { slot_mover_ = std::move(mover); }

  // KVCacheManager mirrors its sequences here: a new empty one, a fork, a free.
  void add(SeqHandle seq);
  void fork(SeqHandle src, SeqHandle dst);
  void remove(SeqHandle seq);
  // The sequence shrank to `length` tokens (rewind): blocks past it are released.
  void truncate(SeqHandle seq, int64_t length);
  // Moves the KV of positions from[i] to to[i], in order (compaction of a verified tree's tail).
  void move(SeqHandle seq, std::span<const int64_t> from, std::span<const int64_t> to);
  // `dst` (empty) shares the blocks of `src` that queries from position `tokens` on can see, as a
  // parallel sample shares its sibling's prompt. False, changing nothing, when `src` no longer
  // holds them all.
  bool share_prefix(SeqHandle src, SeqHandle dst, int64_t tokens);

  // Before a forward writes positions [start, end): releases what no query from `start` on can
  // see, checks the sequence still holds what they can, and makes the blocks of [start, end)
  // present and its own (copy-on-write of a shared one). DriftError when a needed block is gone
  // or the pool is exhausted.
  void prepare_write(SeqHandle seq, int64_t start, int64_t end);
  // After a step computed the sequence up to `computed` tokens: releases every block wholly
  // before computed - window + 1 - block_size (one block of slack lets a sibling that admits a
  // little later still share the prompt's window), except pinned ones.
  void release_passed(SeqHandle seq, int64_t computed);
  // Keeps, for the sequence's life, the blocks that positions from `tokens` on read: a parallel
  // sample's prompt end, so siblings admitted later can still share the prompt (share_prefix).
  void pin_prefix_end(SeqHandle seq, int64_t tokens);

  // References held outside any sequence: a cached main page's window block (KVCacheManager's
  // companions), so a later request can adopt the cached prefix with its window. When the pool
  // runs short, the reclaimer drops such references (returning false once it has none left).
  void retain(PageId page);
  void release(PageId page);
  int64_t retains(PageId page) const;
  bool has_sequence(SeqHandle seq) const { return seqs_.count(seq) > 0; }
  int64_t num_sequences() const { return static_cast<int64_t>(seqs_.size()); }
  void set_reclaimer(std::function<bool()> reclaimer) { reclaimer_ = std::move(reclaimer); }
  // The page of block `block` of the sequence, -1 when it holds none.
  PageId page_of(SeqHandle seq, int64_t block) const;
  // `seq` (empty) takes blocks [first, first + pages.size()) of a `blocks`-block prefix.
  void adopt(SeqHandle seq, int64_t blocks, int64_t first, std::span<const PageId> pages);

  // Slot (page * block_size + offset) of a held position; DriftError for one not held.
  int64_t slot(SeqHandle seq, int64_t pos) const;
  const std::vector<PageId>& block_table(SeqHandle seq) const;
  int64_t pages_held(SeqHandle seq) const;
  // Pages some sequence's table names (retained-only ones, kept for cached pages, not counted).
  int64_t pages_in_sequences() const;

  // Throws DriftError naming the first violated invariant: reference counts equal the
  // block-table entries naming each page plus its retains, the free list holds exactly the pages nobody names,
  // and no table is longer than its sequence (`length_of`) needs.
  void check_integrity(const std::function<int64_t(SeqHandle)>& length_of) const;

 private:
  int64_t blocks_for(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  struct Sequence {
    std::vector<PageId> pages;                 // block table
    int64_t pinned_first = 0, pinned_end = 0;  // blocks [first, end) kept (pin_prefix_end)
    int64_t released_below = 0;                // blocks below it are released or pinned: releases start there
  };
  Sequence& sequence(SeqHandle seq, const char* op);
  const Sequence& sequence(SeqHandle seq, const char* op) const;
  // Releases the sequence's blocks before `first_block` but its pinned ones (they become -1).
  void release_before(Sequence& s, int64_t first_block);
  PageId allocate(SeqHandle seq);
  void decref(PageId page);

  int64_t num_pages_, block_size_, window_;
  std::vector<int32_t> refs_;
  std::vector<int32_t> retains_;   // the retain() part of refs_
  std::vector<PageId> free_list_;  // LIFO, as KVCacheManager's
  std::map<SeqHandle, Sequence> seqs_;
  PageCopier copier_;
  SlotMover slot_mover_;
  std::function<bool()> reclaimer_;
};

}  // namespace drift
