// ngram: prompt-lookup decoding as a draft provider, and the simplest example of one. Each step
// it reads the sequence's tokens through the host (host->sequence_tokens) and proposes what
// followed the last time the sequence's final n tokens occurred (ngram_matcher.h). The host
// already keeps every sequence's tokens, so the plugin keeps no per-request state and needs no
// hooks but create, destroy and on_propose. It uses only the public header, like any
// third-party plugin.
//
// Settings ([plugins.ngram]): min_ngram (default 1), max_ngram (3), max_matches (1: a chain;
// more: a tree merging that many matches), max_depth (0: up to the budget).
#include <algorithm>
#include <cstdio>
#include <new>
#include <span>
#include <string>

#include "drift/plugin.h"
#include "drift/plugin_helpers.hpp"
#include "ngram_matcher.h"

namespace {

struct Ngram {
  const drift_host_api_t* host = nullptr;
  drift::ngram::Settings settings;
  bool reported_unreadable = false;  // a sequence whose tokens the host would not give
};

void report(const drift_host_api_t* host, int32_t level, const std::string& message) {
  if (DRIFT_HAS_FIELD(host, drift_host_api_t, log) && host->log) host->log(host->ctx, level, message.c_str());
}

// For the error message about a setting that is not an integer: its value, when the host can
// read it as another type (a quoted string, a float, a bool).
std::string describe_value(const drift_host_api_t* host, const char* key) {
  char text[64];
  size_t length = 0;
  double real = 0;
  bool flag = false;
  if (host->get_setting_string && host->get_setting_string(host->ctx, key, text, sizeof text, &length) == DRIFT_OK)
    return std::string(1, '"').append(text).append(length >= sizeof text ? "...\"" : "\"");
  if (host->get_setting_double && host->get_setting_double(host->ctx, key, &real) == DRIFT_OK) {
    std::snprintf(text, sizeof text, "%g", real);  // 1.5, not to_string's 1.500000
    return text;
  }
  if (host->get_setting_bool && host->get_setting_bool(host->ctx, key, &flag) == DRIFT_OK)
    return flag ? "true" : "false";
  return "a non-integer value";
}

// Reads one integer setting into `value` (absent: the default stays); a value of another type
// or below `minimum` is reported, naming the key and the value, and fails create. (The
// get_setting_* services precede sequence_tokens, which create checks, so they are present.)
bool read_int(const drift_host_api_t* host, const char* key, int64_t minimum, int64_t& value) {
  int64_t got = 0;
  const drift_status_t status =
      host->get_setting_int ? host->get_setting_int(host->ctx, key, &got) : DRIFT_ERROR_NOT_FOUND;
  if (status == DRIFT_ERROR_NOT_FOUND) return true;
  if (status == DRIFT_OK && got >= minimum) {
    value = got;
    return true;
  }
  const std::string shown = status == DRIFT_OK ? std::to_string(got) : describe_value(host, key);
  report(host, DRIFT_LOG_ERROR,
         std::string("ngram: setting '") + key + "' = " + shown +
             " is invalid: it must be an integer >= " + std::to_string(minimum));
  return false;
}

bool read_settings(const drift_host_api_t* host, drift::ngram::Settings& s) {
  if (!read_int(host, "min_ngram", 1, s.min_ngram) || !read_int(host, "max_ngram", 1, s.max_ngram) ||
      !read_int(host, "max_matches", 1, s.max_matches) || !read_int(host, "max_depth", 0, s.max_depth))
    return false;
  if (s.max_ngram >= s.min_ngram) return true;
  report(host, DRIFT_LOG_ERROR,
         "ngram: setting 'max_ngram' = " + std::to_string(s.max_ngram) +
             " is invalid: it must be >= 'min_ngram' = " + std::to_string(s.min_ngram) + " (max_ngram defaults to 3)");
  return false;
}

drift_status_t create(const drift_host_api_t* host, const char*, void** instance) {
  // A host built against an older header may lack services: check before using them.
  if (!host || !DRIFT_HAS_FIELD(host, drift_host_api_t, sequence_tokens) || !host->sequence_tokens) {
    if (host) report(host, DRIFT_LOG_ERROR, "ngram: the host does not provide sequence_tokens");
    return DRIFT_ERROR_NOT_SUPPORTED;
  }
  return drift::plugin::guard(host, "ngram", "create", [&] {
    drift::ngram::Settings settings;
    if (!read_settings(host, settings)) return DRIFT_ERROR_INVALID_ARGUMENT;
    *instance = new Ngram{host, settings};
    return DRIFT_OK;
  });
}

void destroy(void* instance) { delete static_cast<Ngram*>(instance); }

// The sequence's tokens, or false (logged once per instance, not once per step) when the host
// cannot give them.
bool sequence_tokens(Ngram& ngram, drift_seq_id_t seq, std::span<const drift_token_t>& out) {
  const drift_token_t* tokens = nullptr;
  int64_t length = 0;
  const drift_status_t status = ngram.host->sequence_tokens(ngram.host->ctx, seq, &tokens, &length);
  if (status == DRIFT_OK && length >= 0 && (tokens || length == 0)) {
    out = {tokens, static_cast<size_t>(length)};
    return true;
  }
  if (!ngram.reported_unreadable)
    report(ngram.host, DRIFT_LOG_WARN,
           "ngram: cannot read the tokens of sequence " + std::to_string(seq) + " (status " + std::to_string(status) +
               "); no draft for it (further such sequences are not logged)");
  ngram.reported_unreadable = true;
  return false;
}

// Writes only the "out" fields tokens[], parents[] and num_nodes, never past the budget. A
// sequence without tokens just gets no draft: the request decodes on without speculation.
void propose_one(Ngram& ngram, drift_draft_tree_t& tree) {
  if (!DRIFT_HAS_FIELD(&tree, drift_draft_tree_t, parents)) return;
  tree.num_nodes = 0;
  std::span<const drift_token_t> tokens;
  if (tree.budget <= 0 || !sequence_tokens(ngram, tree.seq_id, tokens)) return;
  const drift::ngram::Draft draft = drift::ngram::propose(tokens, ngram.settings, tree.budget);
  std::copy(draft.tokens.begin(), draft.tokens.end(), tree.tokens);
  std::copy(draft.parents.begin(), draft.parents.end(), tree.parents);
  tree.num_nodes = static_cast<int32_t>(draft.tokens.size());
}

drift_status_t on_propose(void* instance, const drift_step_t*, drift_draft_tree_t* const* trees, size_t n) {
  Ngram& ngram = *static_cast<Ngram*>(instance);
  return drift::plugin::guard(ngram.host, "ngram", "on_propose", [&] {
    for (size_t i = 0; i < n; ++i)
      if (trees[i]) propose_one(ngram, *trees[i]);
  });
}

// Static and constant: it must outlive every call, and drift_plugin_get must not allocate. Every
// hook is named, so the NULLs (= not interested) are visible.
constexpr drift_plugin_t kDescriptor = {
    .struct_size = sizeof(drift_plugin_t),
    .abi_major = DRIFT_ABI_MAJOR,
    .abi_minor = DRIFT_ABI_MINOR,
    .name = "ngram",
    .version = "1.0.0",
    .kinds = DRIFT_KIND_DRAFT_PROVIDER,
    .create = create,
    .destroy = destroy,
    .get_extension = nullptr,
    .on_declare_needs = nullptr,  // no hidden states, no draft model
    .on_request_start = nullptr,  // stateless: the host keeps the tokens
    .on_request_finish = nullptr,
    .on_accept = nullptr,
    .on_rewind = nullptr,
    .on_propose = on_propose,      // required of a draft provider
    .on_choose_kv_view = nullptr,  // verification policy hooks
    .on_prefix_match = nullptr,    // cache manager hooks
    .on_pages_full = nullptr,
    .on_evict = nullptr,
    .on_target_forward = nullptr,  // no draft model to keep in step with the target
    .declare_memory = nullptr,
};

}  // namespace

// The only exported symbol (hidden visibility elsewhere). The host checks abi_major itself and
// logs both versions on a mismatch, so the descriptor is returned unconditionally.
extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t) {
  return &kDescriptor;
}
