#pragma once
// SpecPV's choices, as plain functions of the settings and a sequence's state (no host calls, so
// the tests can hold them against a brute-force selection): when a step verifies partially or
// fully, and which blocks a partial verification attends to.
//
// Blocks are block-table indices. A full verification that refreshes at C committed tokens
// (KV computed under full attention for positions < C) fixes, until the next one:
//   sink       [0, n_sink)
//   candidates [n_sink, W0)          of which n_retrieval_blocks are retrieved per (layer, kv head)
//   window     [W0, B0)              W0 = max(n_sink, B0 - n_window_blocks)
//   buffer     [B0, tail)            B0 = C / block_size: the block of the first token committed
//                                    since, and every later one up to the step's tail
// and the host adds the tail (the root's block and after). Window, buffer and tail are
// contiguous, so unlike the reference (whose window starts mid-block and whose candidates end at
// the last whole block before it) no token between the retrieved blocks and the window is lost.
#include <cstdint>
#include <vector>

#include "settings.h"

namespace specpv {

enum class Verify { Full, Refresh, Partial };

// What the last refreshing full verification left behind.
struct Retrieval {
  int64_t committed = 0;     // C
  int64_t window_block = 0;  // W0
  int64_t buffer_block = 0;  // B0
  // Per list (layer * num_kv_heads + kv head): the retrieved candidate blocks, ascending.
  std::vector<std::vector<int64_t>> retrieved;
};

// Sink end, W0 and B0 for a refresh at `committed` tokens.
struct Bounds {
  int64_t sink_end = 0;
  int64_t window_block = 0;
  int64_t buffer_block = 0;
  int64_t candidates() const { return window_block - sink_end; }
};
Bounds refresh_bounds(const Settings& s, int64_t committed);

// The step's choice for a sequence whose root (its last committed token, no KV yet) is at
// `root_position`, after `partial_steps` partial steps since the last refresh (`last`: none yet).
Verify choose(const Settings& s, const Retrieval* last, int64_t root_position, int64_t partial_steps);

// The blocks list `list` attends to before the tail block `tail_block`, ascending and distinct.
std::vector<int64_t> view_blocks(const Settings& s, const Retrieval& r, int64_t list, int64_t tail_block);

// top_k's indices [lists, k] (into the candidates, best first) as each list's ascending blocks.
std::vector<std::vector<int64_t>> retrieved_blocks(const std::vector<int32_t>& indices, int64_t lists, int64_t k,
                                                   int64_t sink_end);

}  // namespace specpv
