#pragma once
// PrefixCacheMetrics: what the cache managers (plugins such as prefix_cache) did for the engine,
// counted by the host from what it adopted and released -- never from a plugin's own report.
#include <cstdint>

namespace drift {

struct PrefixCacheMetrics {
  int64_t queries = 0;        // admissions that asked the cache managers (requests with caching on)
  int64_t hits = 0;           // of them, admissions that adopted at least one cached page
  int64_t query_tokens = 0;   // tokens those admissions had to have KV for (prompt, + output if resumed)
  int64_t hit_tokens = 0;     // of them, tokens whose KV came from the cache (prefill avoided)
  int64_t evicted_pages = 0;  // pages the cache managers gave back (on_evict, release_pages, disabled)
  int64_t pages_held = 0;     // pages the cache managers hold now
  double hit_rate() const {   // token hit rate, as vLLM reports it
    return query_tokens > 0 ? static_cast<double>(hit_tokens) / static_cast<double>(query_tokens) : 0.0;
  }
};

}  // namespace drift
