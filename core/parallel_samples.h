#pragma once
// Parallel samples (OpenAI's n > 1): several requests on one prompt, each sampling its own
// output. They share the prompt's KV. A sample admitted while a sibling holds the prompt's KV
// adopts the sibling's full pages of it -- read-only, as prefix-cache hits are, so nothing is
// ever copied -- and computes only the rest: less than a page, ending with the prompt's last
// token, whose logits give the sample its first token. A sample waits while a sibling is still
// computing the prompt, rather than computing it a second time beside it.
#include <cstdint>
#include <span>

#include "core/kv_cache_manager.h"
#include "core/sequence.h"

namespace drift {

// The most samples one request may ask for (OpenAI's limit for n).
inline constexpr int64_t kMaxParallelSamples = 128;

// Prompt tokens a sample can take from a sibling: whole pages, leaving the last prompt token to
// be computed (its logits are the sample's own first pick). 0 for a request on its own.
int64_t shareable_prompt_tokens(const Sequence& seq, int64_t block_size);

// Whether a running sibling is still computing the shareable part of the prompt: admitting `seq`
// now would compute it twice.
bool waits_for_sibling_prompt(const Sequence& seq, std::span<Sequence* const> running, int64_t block_size);

// Adopts a running sibling's pages of the shareable prompt into `seq.kv` (which must be empty)
// and returns the tokens they cover; 0 when no sibling holds them (or, with sliding-window layers,
// no longer holds their window's KV).
int64_t share_sibling_prompt(Sequence& seq, std::span<Sequence* const> running, KVCacheManager& kv);

}  // namespace drift
