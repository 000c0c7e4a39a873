#pragma once
// The suffix_cache plugin's [plugins.<name>] table (SuffixDecoding, docs/speculation.md):
//   max_depth = 24             longest context suffix matched (and stored per position)
//   max_spec_tokens = 16       most tokens one draft holds (also capped by the engine's budget)
//   alpha = 1.0, beta = 0.0    a match of L tokens drafts at most alpha * L + beta tokens
//   min_token_prob = 0.1       tokens whose path probability falls below this are not drafted
//   max_cached_requests = 1000 responses kept in the global tree, oldest evicted first (0: none)
//   draft = "tree"             "tree" (best-first by path probability) or "chain"
// A wrong type, an out-of-range value or an unknown key is an error naming the key.
#include <cstdint>
#include <string>

#include "draft.h"

namespace suffix {

struct Settings {
  int32_t max_depth = 24;
  int64_t max_cached_requests = 1000;
  DraftParams draft;
};

// Throws drift::plugin::Error (DRIFT_ERROR_INVALID_ARGUMENT) naming the key and the value.
Settings read_settings(const std::string& settings_toml);

}  // namespace suffix
