// suffix_cache: SuffixDecoding (arXiv 2411.04975) as a draft provider. It drafts from suffix
// trees over text already seen -- the request's own prompt and output, and the responses of
// earlier and running requests -- with no draft model: microseconds per token on the CPU,
// whatever the backend. Drafts carry their tokens' probabilities, so the engine's fallback
// ([speculative] fallback_provider, e.g. eagle3) can take over when a draft scores low.
// It uses only the public header, as a third-party plugin would.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "drift/plugin.h"
#include "drift/plugin_helpers.hpp"
#include "speculator.h"

namespace {

struct Plugin {
  const drift_host_api_t* host;
  suffix::Speculator speculator;
  std::string stats;  // the last stats_json() handed out
};

Plugin& plugin(void* instance) { return *static_cast<Plugin*>(instance); }

constexpr const char* kPlugin = "suffix_cache";

drift_status_t create(const drift_host_api_t* host, const char* settings_toml, void** instance) {
  if (!host || !host->log) return DRIFT_ERROR_NOT_SUPPORTED;
  return drift::plugin::guard(host, kPlugin, "create", [&] {
    *instance = new Plugin{host, suffix::Speculator(suffix::read_settings(settings_toml ? settings_toml : "")), {}};
  });
}

void destroy(void* instance) { delete static_cast<Plugin*>(instance); }

// Only requests it drafts for are its business: a request speculating with another provider, or
// not at all (drift bench's "off" runs), stays out of the trees -- and so cannot hand a later
// run of the same prompts its answers. (A 1.1 host does not say: then every request counts.)
bool drafts_for(const drift_request_info_t& request) {
  return !DRIFT_HAS_FIELD(&request, drift_request_info_t, provides_drafts) || request.provides_drafts;
}

// A hook that fails for a request ends the plugin's part in it (the host calls nothing more for
// it, on_request_finish included): its state goes now.
drift_status_t forget_on_error(Plugin& p, drift_seq_id_t seq, drift_status_t status) {
  if (status != DRIFT_OK) p.speculator.finish(seq);
  return status;
}

drift_status_t on_request_start(void* instance, const drift_request_info_t* request) {
  Plugin& p = plugin(instance);
  if (!drafts_for(*request)) return DRIFT_OK;
  return forget_on_error(p, request->seq_id, drift::plugin::guard(p.host, kPlugin, "on_request_start", [&] {
                           p.speculator.start(request->seq_id,
                                              {request->tokens, static_cast<size_t>(request->num_tokens)},
                                              request->resumed);
                         }));
}

drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t) {
  plugin(instance).speculator.finish(seq);
  return DRIFT_OK;
}

drift_status_t on_accept(void* instance, drift_seq_id_t seq, const drift_token_t* tokens, size_t n) {
  Plugin& p = plugin(instance);
  return forget_on_error(p, seq, drift::plugin::guard(p.host, kPlugin, "on_accept", [&] {
                           p.speculator.accept(seq, {tokens, n});
                         }));
}

void write(const suffix::Draft& d, drift_draft_tree_t& tree) {
  const auto n = static_cast<int32_t>(std::min<size_t>(d.tokens.size(), static_cast<size_t>(tree.budget)));
  std::copy_n(d.tokens.begin(), n, tree.tokens);
  std::copy_n(d.parents.begin(), n, tree.parents);
  if (tree.probs) {
    std::copy_n(d.probs.begin(), n, tree.probs);
    tree.has_probs = true;
  }
  tree.num_nodes = n;
}

drift_status_t on_propose(void* instance, const drift_step_t*, drift_draft_tree_t* const* trees, size_t n) {
  Plugin& p = plugin(instance);
  // One sequence's failure is its own (its tree's status); the others still get drafts.
  for (size_t i = 0; i < n; ++i) {
    drift_draft_tree_t& tree = *trees[i];
    tree.num_nodes = 0;
    tree.status = forget_on_error(p, tree.seq_id, drift::plugin::guard(p.host, kPlugin, "on_propose", [&] {
                                    write(p.speculator.propose(tree.seq_id, tree.budget), tree);
                                  }));
    if (tree.status != DRIFT_OK) tree.num_nodes = 0;
  }
  return DRIFT_OK;
}

const char* stats_json(void* instance) {
  Plugin& p = plugin(instance);
  p.stats = p.speculator.stats_json();
  return p.stats.c_str();
}

constexpr drift_stats_extension_t kStats = {sizeof(drift_stats_extension_t), &stats_json};

const void* get_extension(void*, const char* key) {
  return key && std::strcmp(key, DRIFT_STATS_EXTENSION) == 0 ? &kStats : nullptr;
}

constexpr drift_plugin_t kDescriptor = {
    .struct_size = sizeof(drift_plugin_t),
    .abi_major = DRIFT_ABI_MAJOR,
    .abi_minor = DRIFT_ABI_MINOR,
    .name = "suffix_cache",
    .version = "1.0.0",
    .kinds = DRIFT_KIND_DRAFT_PROVIDER,
    .create = &create,
    .destroy = &destroy,
    .get_extension = &get_extension,
    .on_declare_needs = nullptr,  // no hidden states: drafts come from text alone
    .on_request_start = &on_request_start,
    .on_request_finish = &on_request_finish,
    .on_accept = &on_accept,
    .on_rewind = nullptr,  // only committed tokens reach the trees
    .on_propose = &on_propose,
    .on_choose_kv_view = nullptr,
    .on_prefix_match = nullptr,
    .on_pages_full = nullptr,
    .on_evict = nullptr,
    .on_target_forward = nullptr,
    .declare_memory = nullptr,
};

}  // namespace

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t host_abi_version) {
  return DRIFT_ABI_VERSION_MAJOR(host_abi_version) == DRIFT_ABI_MAJOR ? &kDescriptor : nullptr;
}
