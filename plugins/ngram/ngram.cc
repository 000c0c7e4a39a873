// ngram: prompt-lookup decoding as a draft provider, and the simplest example of one. Each step
// it reads the sequence's tokens through the host (host->sequence_tokens) and proposes what
// followed the last time the sequence's final n tokens occurred (ngram_matcher.h). It keeps no
// per-request state, so the only hooks it needs are create, destroy and on_propose.
//
// Settings ([plugins.ngram]): min_ngram (default 1), max_ngram (3), max_matches (1: a chain;
// more: a tree from that many matches), max_depth (0: up to the budget).
#include <memory>
#include <string>

#include "drift/plugin.h"
#include "ngram_matcher.h"

namespace {

struct Ngram {
  const drift_host_api_t* host = nullptr;
  drift::ngram::Settings settings;
};

void log(const drift_host_api_t* host, int32_t level, const std::string& message) {
  host->log(host->ctx, level, message.c_str());
}

// Reads one integer setting (absent: the default stays) and checks its lower bound.
bool read_setting(const drift_host_api_t* host, const char* key, int64_t minimum, int64_t& value) {
  const drift_status_t status = host->get_setting_int(host->ctx, key, &value);
  if (status != DRIFT_OK && status != DRIFT_ERROR_NOT_FOUND) {
    log(host, DRIFT_LOG_ERROR, std::string("ngram: setting '") + key + "' must be an integer");
    return false;
  }
  if (value < minimum) {
    log(host, DRIFT_LOG_ERROR,
        std::string("ngram: setting '") + key + "' = " + std::to_string(value) +
            " must be >= " + std::to_string(minimum));
    return false;
  }
  return true;
}

drift_status_t create(const drift_host_api_t* host, const char*, void** instance) {
  auto n = std::make_unique<Ngram>();
  n->host = host;
  drift::ngram::Settings& s = n->settings;
  if (!read_setting(host, "min_ngram", 1, s.min_ngram) || !read_setting(host, "max_ngram", 1, s.max_ngram) ||
      !read_setting(host, "max_matches", 1, s.max_matches) || !read_setting(host, "max_depth", 0, s.max_depth))
    return DRIFT_ERROR_INVALID_ARGUMENT;
  if (s.max_ngram < s.min_ngram) {
    log(host, DRIFT_LOG_ERROR,
        "ngram: max_ngram = " + std::to_string(s.max_ngram) + " is below min_ngram = " + std::to_string(s.min_ngram));
    return DRIFT_ERROR_INVALID_ARGUMENT;
  }
  *instance = n.release();
  return DRIFT_OK;
}

void destroy(void* instance) { delete static_cast<Ngram*>(instance); }

// Writes into the host's buffers only: tokens, parents and num_nodes, never past the budget.
drift_status_t on_propose(void* instance, const drift_step_t*, drift_draft_tree_t* const* trees, size_t n) {
  const auto& ngram = *static_cast<Ngram*>(instance);
  for (size_t i = 0; i < n; ++i) {
    drift_draft_tree_t& tree = *trees[i];
    const drift_token_t* tokens = nullptr;
    int64_t length = 0;
    if (ngram.host->sequence_tokens(ngram.host->ctx, tree.seq_id, &tokens, &length) != DRIFT_OK) {
      tree.status = DRIFT_ERROR_NOT_FOUND;  // fails this sequence only
      continue;
    }
    const drift::ngram::Draft draft =
        drift::ngram::propose({tokens, static_cast<size_t>(length)}, ngram.settings, tree.budget);
    for (size_t k = 0; k < draft.tokens.size(); ++k) {
      tree.tokens[k] = draft.tokens[k];
      tree.parents[k] = draft.parents[k];
    }
    tree.num_nodes = static_cast<int32_t>(draft.tokens.size());
  }
  return DRIFT_OK;
}

const drift_plugin_t descriptor = [] {
  drift_plugin_t d{};
  d.struct_size = sizeof(drift_plugin_t);
  d.abi_major = DRIFT_ABI_MAJOR;
  d.abi_minor = DRIFT_ABI_MINOR;
  d.name = "ngram";
  d.version = "1.0.0";
  d.kinds = DRIFT_KIND_DRAFT_PROVIDER;
  d.create = create;
  d.destroy = destroy;
  d.on_propose = on_propose;
  return d;
}();

}  // namespace

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t) {
  return &descriptor;
}
