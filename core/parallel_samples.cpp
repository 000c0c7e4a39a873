#include "core/parallel_samples.h"

#include <algorithm>

namespace drift {
namespace {

bool siblings(const Sequence& a, const Sequence& b) {
  return &a != &b && a.sample_group >= 0 && a.sample_group == b.sample_group;
}

// A sibling's prompt KV is usable once it covers the shareable tokens: its pages for them are
// full and never written again (later writes go to later positions).
bool holds_prompt(const Sequence& sibling, int64_t shareable) {
  return sibling.kv >= 0 && sibling.num_computed >= shareable;
}

}  // namespace

int64_t shareable_prompt_tokens(const Sequence& seq, int64_t block_size) {
  if (seq.sample_group < 0 || seq.prompt.empty()) return 0;
  return (static_cast<int64_t>(seq.prompt.size()) - 1) / block_size * block_size;
}

bool waits_for_sibling_prompt(const Sequence& seq, std::span<Sequence* const> running, int64_t block_size) {
  const int64_t shareable = shareable_prompt_tokens(seq, block_size);
  if (shareable == 0) return false;
  const auto computing = [&](const Sequence* s) { return siblings(seq, *s) && !holds_prompt(*s, shareable); };
  const auto holding = [&](const Sequence* s) { return siblings(seq, *s) && holds_prompt(*s, shareable); };
  return std::any_of(running.begin(), running.end(), computing) &&
         std::none_of(running.begin(), running.end(), holding);
}

int64_t share_sibling_prompt(Sequence& seq, std::span<Sequence* const> running, KVCacheManager& kv) {
  const int64_t shareable = shareable_prompt_tokens(seq, kv.block_size());
  if (shareable == 0 || kv.length(seq.kv) != 0) return 0;
  const auto holder = std::find_if(running.begin(), running.end(),
                                   [&](const Sequence* s) { return siblings(seq, *s) && holds_prompt(*s, shareable); });
  if (holder == running.end()) return 0;
  // With sliding-window layers the holder may have moved past the prompt's window: then the
  // sample computes its prompt itself.
  return kv.share_prefix(seq.kv, (*holder)->kv, shareable / kv.block_size()) ? shareable : 0;
}

}  // namespace drift
