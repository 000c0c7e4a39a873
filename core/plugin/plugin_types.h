#pragma once
// C++ views of the plugin hook arguments and results, as the engine passes and receives them
// through PluginHost. The host converts them to and from the C structs of drift/plugin.h, so
// the engine never touches ABI structs or plugin-owned buffers.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/speculation/draft_tree.h"
#include "drift/plugin.h"

namespace drift {

enum class HookFinishReason : int32_t {
  Stop = DRIFT_FINISH_STOP,
  Length = DRIFT_FINISH_LENGTH,
  Abort = DRIFT_FINISH_ABORT,
  Preempted = DRIFT_FINISH_PREEMPTED,  // the request will be re-admitted (resumed)
  Error = DRIFT_FINISH_ERROR,
};

struct RequestInfo {
  drift_seq_id_t seq = 0;
  std::span<const drift_token_t> tokens;  // prompt (+ generated tokens when resumed)
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;          // KV adopted from a cache manager's prefix match
  int64_t max_new_tokens = 0;
  double temperature = 0.0;
  bool resumed = false;
  std::string cache_salt;                 // "" when none (SamplingParams::cache_salt)
  bool speculates = false;                // the request asks a draft provider for drafts
  std::string draft_provider;             // which one: an entry name, "" = [speculative]'s
};

struct StepInfo {
  int64_t step = 0;
  void* stream = nullptr;  // nullptr on the CPU backend
};

struct DraftRequest {
  drift_seq_id_t seq = 0;
  int32_t budget = 0;      // max draft nodes for this sequence this step
  std::string provider;    // the draft provider's entry name; "" = [speculative]'s
};

// One sequence's hidden-state rows in the forward that just ran (on_target_forward).
struct ForwardRows {
  drift_seq_id_t seq = 0;
  int64_t first_position = 0;
  int64_t num_rows = 0;
  int64_t num_tokens = 0;  // prompt + committed output tokens
};

struct KvViewRequest {
  drift_seq_id_t seq = 0;
  std::span<const int32_t> block_table;  // the sequence's pages (max_pages = its length)
  int64_t tail_block = 0;                // the block holding the tree's root: it and all after it
                                         // are always attended, never listed
};

// full: attend to the whole block table. Otherwise `lists` holds one page list per layer, or
// per (layer, kv head) at layer * num_kv_heads + head when per_kv_head: distinct pages of the
// block table before the tail, in block-table order (the host checked and sorted them).
struct KvView {
  drift_seq_id_t seq = 0;
  bool full = true;
  bool per_kv_head = false;
  bool keep_queries = false;  // 1.3: keep the verify rows' queries for host->query_states
  std::vector<std::vector<drift_page_id_t>> lists;
};

struct FullPages {
  drift_seq_id_t seq = 0;
  int64_t first_block = 0;                   // block-table index of pages[0]
  std::span<const drift_page_id_t> pages;
  std::span<const drift_token_t> tokens;     // pages.size() * block_size tokens
  std::span<const drift_token_t> prefix;     // the first_block * block_size tokens before them
  std::string_view cache_salt;               // the request's (SamplingParams::cache_salt)
};

// What `drift plugins list` prints and what the engine logs at start-up.
struct PluginInfo {
  std::string name;         // the config entry's name (the key [speculative] refers to)
  std::string plugin_name;  // the descriptor's own name
  std::string version;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  drift_kinds_t kinds = 0;
  std::string path;         // the library it was loaded from, or "<built-in>"
  std::string found;        // how: "built-in", "path" (given), or the search folder's origin
  bool enabled = false;
  std::string error;        // why it is disabled (load, validation or create failure)
  // ABI 1.4's declare_memory: the most bytes it may hold (-1: it declared nothing, no limit),
  // and the most it has held so far.
  int64_t memory_limit = -1;
  int64_t memory_peak = 0;
};

// What plugins declared they will hold (declare_memory), summed: the engine sizes its KV pool
// around it.
struct PluginMemory {
  int64_t fixed_bytes = 0;
  int64_t bytes_per_kv_token = 0;
};

// "draft_provider,verification_policy,cache_manager" (or "none").
std::string kinds_string(drift_kinds_t kinds);

}  // namespace drift
