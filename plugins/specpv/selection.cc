#include "selection.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace specpv {

Bounds refresh_bounds(const Settings& s, int64_t committed) {
  Bounds b;
  b.buffer_block = committed / s.block_size;
  b.sink_end = std::min(s.n_sink_blocks, b.buffer_block);
  b.window_block = std::max(b.sink_end, b.buffer_block - s.n_window_blocks);
  return b;
}

Verify choose(const Settings& s, const Retrieval* last, int64_t root_position, int64_t partial_steps) {
  if (root_position < s.partial_threshold) return Verify::Full;
  if (!last || root_position - last->committed > s.n_spec_tokens_buf || partial_steps >= s.full_refresh_interval)
    return Verify::Refresh;
  return Verify::Partial;
}

std::vector<int64_t> view_blocks(const Settings& s, const Retrieval& r, int64_t list, int64_t tail_block) {
  if (list < 0 || list >= static_cast<int64_t>(r.retrieved.size()))
    throw std::logic_error("no retrieval for list " + std::to_string(list));
  if (tail_block < r.buffer_block)
    throw std::logic_error("the tail block " + std::to_string(tail_block) + " lies before the buffer's first block " +
                           std::to_string(r.buffer_block));
  std::vector<int64_t> blocks;
  const int64_t sink_end = std::min(s.n_sink_blocks, r.buffer_block);
  for (int64_t b = 0; b < sink_end; ++b) blocks.push_back(b);
  for (int64_t b : r.retrieved[list]) {
    if (b < sink_end || b >= r.window_block)
      throw std::logic_error("retrieved block " + std::to_string(b) + " lies outside the candidates [" +
                             std::to_string(sink_end) + ", " + std::to_string(r.window_block) + ")");
    blocks.push_back(b);
  }
  for (int64_t b = r.window_block; b < tail_block; ++b) blocks.push_back(b);
  // Sink, retrieved and window/buffer ranges are disjoint and in order; a repeat is a broken state.
  if (std::adjacent_find(blocks.begin(), blocks.end(), [](int64_t a, int64_t b) { return a >= b; }) != blocks.end())
    throw std::logic_error("a view lists a block twice or out of order");
  return blocks;
}

std::vector<std::vector<int64_t>> retrieved_blocks(const std::vector<int32_t>& indices, int64_t lists, int64_t k,
                                                   int64_t sink_end) {
  if (static_cast<int64_t>(indices.size()) != lists * k) throw std::logic_error("top-k indices of the wrong size");
  std::vector<std::vector<int64_t>> out(lists);
  for (int64_t l = 0; l < lists; ++l) {
    for (int64_t i = 0; i < k; ++i) out[l].push_back(sink_end + indices[l * k + i]);
    std::sort(out[l].begin(), out[l].end());
  }
  return out;
}

}  // namespace specpv
