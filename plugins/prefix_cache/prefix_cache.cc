// prefix_cache: a cache-manager plugin that lets a request adopt the KV pages of an earlier
// request's identical prefix instead of recomputing them -- the worked example of a cache
// manager (docs/plugins.md). The host offers the full pages of requests whose prompt is in
// (on_pages_full); the plugin keeps them in a PageIndex (page_index.h: hash chains over full
// pages, tokens compared on every hit, LRU over leaves) and names them when a new request
// starts with the same tokens under the same cache salt (on_prefix_match). The host counts
// references and checks every page named against its own record, so a mistake here can cost a
// hit but never correctness. Public header only, like any third-party plugin.
//
// Settings ([plugins.prefix_cache]): capacity_pages (pages to hold at most; 0, the default: as
// many as the pool can spare, given back on demand through on_evict) or capacity_fraction (of
// the pool, in (0, 1]); salt (a string mixed into every key, e.g. a checkpoint revision).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <unordered_map>

#include "drift/plugin.h"
#include "drift/plugin_helpers.hpp"
#include "page_index.h"

namespace {

using drift::prefix_cache::kRoot;
using drift::prefix_cache::NodeId;
using drift::prefix_cache::PageIndex;

struct RequestState {
  std::string salt;
  NodeId tail = kRoot;  // the node holding the last block offered
  int64_t blocks = 0;   // blocks up to and including tail
};

struct PrefixCache {
  const drift_host_api_t* host = nullptr;
  int64_t capacity = 0;  // pages
  PageIndex index;
  std::unordered_map<drift_seq_id_t, RequestState> requests;
  bool warned_capacity = false;
};

void report(const drift_host_api_t* host, int32_t level, const std::string& message) {
  if (host->log) host->log(host->ctx, level, message.c_str());
}

bool has_release_pages(const drift_host_api_t* host) {
  return DRIFT_HAS_FIELD(host, drift_host_api_t, release_pages) && host->release_pages;
}

std::string request_salt(const drift_request_info_t* request) {
  if (!DRIFT_HAS_FIELD(request, drift_request_info_t, cache_salt) || !request->cache_salt) return "";
  return request->cache_salt;
}

// A page some sequence still reads (the cache's own reference is one of ref_count): evicting it
// would free nothing. Unknown pages count as used.
bool in_use(const drift_host_api_t* host, drift_page_id_t page) {
  drift_page_info_t info{};
  info.struct_size = sizeof info;
  return !host->page_info || host->page_info(host->ctx, page, &info) != DRIFT_OK || info.ref_count > 1;
}

// The model, block size and the configured salt: every key is seeded with it.
uint64_t identity(const drift_host_api_t* host, const std::string& salt) {
  const drift_model_info_t* m = host->model_info(host->ctx);
  const int64_t fields[] = {m->vocab_size,   m->hidden_size, m->intermediate_size, m->num_layers,      m->num_heads,
                            m->num_kv_heads, m->head_dim,    m->block_size,        m->activation_dtype};
  uint64_t seed = drift::prefix_cache::xxh3_bytes({reinterpret_cast<const char*>(fields), sizeof fields}, 0);
  seed = drift::prefix_cache::xxh3_bytes({reinterpret_cast<const char*>(&m->rope_theta), sizeof m->rope_theta}, seed);
  return drift::prefix_cache::xxh3_bytes(salt, seed);
}

constexpr const char* kPlugin = "prefix_cache";

PrefixCache& self(void* instance) { return *static_cast<PrefixCache*>(instance); }

// ---- Settings -------------------------------------------------------------------------------

bool read_capacity(const drift_host_api_t* host, int64_t pool, int64_t& capacity) {
  int64_t pages = 0;
  double fraction = 0;
  const drift_status_t pages_status = host->get_setting_int(host->ctx, "capacity_pages", &pages);
  const drift_status_t fraction_status = host->get_setting_double(host->ctx, "capacity_fraction", &fraction);
  if (pages_status == DRIFT_OK && fraction_status == DRIFT_OK) {
    report(host, DRIFT_LOG_ERROR, "give capacity_pages or capacity_fraction, not both");
    return false;
  }
  capacity = pool;
  if (pages_status == DRIFT_OK) {
    if (pages < 0) {
      report(host, DRIFT_LOG_ERROR, "capacity_pages = " + std::to_string(pages) + ": must be >= 0 (0: the pool)");
      return false;
    }
    if (pages > 0) capacity = std::min(pages, pool);
  } else if (pages_status != DRIFT_ERROR_NOT_FOUND) {
    report(host, DRIFT_LOG_ERROR, "capacity_pages must be an integer");
    return false;
  }
  if (fraction_status == DRIFT_OK) {
    if (!(fraction > 0 && fraction <= 1)) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", fraction);
      report(host, DRIFT_LOG_ERROR, std::string("capacity_fraction = ") + text + ": must be in (0, 1]");
      return false;
    }
    capacity = std::max<int64_t>(1, static_cast<int64_t>(fraction * static_cast<double>(pool)));
  } else if (fraction_status != DRIFT_ERROR_NOT_FOUND) {
    report(host, DRIFT_LOG_ERROR, "capacity_fraction must be a number");
    return false;
  }
  return true;
}

bool read_salt(const drift_host_api_t* host, std::string& salt) {
  size_t length = 0;
  char probe[1];
  const drift_status_t status = host->get_setting_string(host->ctx, "salt", probe, sizeof probe, &length);
  if (status == DRIFT_ERROR_NOT_FOUND) return true;
  if (status != DRIFT_OK) {
    report(host, DRIFT_LOG_ERROR, "salt must be a string");
    return false;
  }
  salt.assign(length + 1, '\0');
  host->get_setting_string(host->ctx, "salt", salt.data(), salt.size(), &length);
  salt.resize(length);
  return true;
}

// ---- Hooks ------------------------------------------------------------------------------------

drift_status_t create(const drift_host_api_t* host, const char* /*settings_toml*/, void** instance) {
  if (!host || !instance || !host->model_info || !host->get_setting_int || !host->get_setting_double ||
      !host->get_setting_string)
    return DRIFT_ERROR_NOT_SUPPORTED;
  return drift::plugin::guard(host, kPlugin, "create", [&] {
    const drift_model_info_t* model = host->model_info(host->ctx);
    if (model->block_size <= 0) {
      report(host, DRIFT_LOG_ERROR, "the host reports no KV page size");
      return DRIFT_ERROR_NOT_SUPPORTED;
    }
    // num_pages is 0 before the pool is sized (`drift plugins list`): the settings are still checked.
    const int64_t pool = model->num_pages > 0 ? model->num_pages : INT64_MAX / 2;
    int64_t capacity = 0;
    std::string salt;
    if (!read_capacity(host, pool, capacity) || !read_salt(host, salt)) return DRIFT_ERROR_INVALID_ARGUMENT;
    *instance = new PrefixCache{host, capacity, PageIndex(model->block_size, identity(host, salt)), {}, false};
    return DRIFT_OK;
  });
}

void destroy(void* instance) { delete static_cast<PrefixCache*>(instance); }

drift_status_t on_request_start(void* instance, const drift_request_info_t* request) {
  PrefixCache& c = self(instance);
  return drift::plugin::guard(c.host, kPlugin, "on_request_start", [&] {
    RequestState& state = c.requests[request->seq_id];
    state = RequestState{request_salt(request), kRoot, 0};
    return DRIFT_OK;
  });
}

drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t /*reason*/) {
  self(instance).requests.erase(seq);
  return DRIFT_OK;
}

drift_status_t on_prefix_match(void* instance, const drift_request_info_t* request, drift_page_id_t* pages,
                               int32_t max_pages, int32_t* num_pages) {
  PrefixCache& c = self(instance);
  return drift::plugin::guard(c.host, kPlugin, "on_prefix_match", [&] {
    const std::span<const drift::prefix_cache::Token> tokens(request->tokens, static_cast<size_t>(request->num_tokens));
    const std::vector<NodeId> path = c.index.walk(tokens, request_salt(request), max_pages);
    c.index.touch(path);  // LRU bookkeeping is the only state a match may change
    for (size_t i = 0; i < path.size(); ++i) pages[i] = c.index.page(path[i]);
    *num_pages = static_cast<int32_t>(path.size());
    return DRIFT_OK;
  });
}

// Frees one slot under the capacity by giving back the least recently used unused leaf, never
// `keep` (the node being extended). False when nothing can go.
bool make_room(PrefixCache& c, NodeId keep) {
  if (c.index.size() < c.capacity) return true;
  if (!has_release_pages(c.host)) {
    if (!c.warned_capacity)
      report(c.host, DRIFT_LOG_WARN, "the host has no release_pages: the cache stops growing at capacity");
    c.warned_capacity = true;
    return false;
  }
  const auto victims = c.index.evict(
      c.index.size() - c.capacity + 1, [&](drift_page_id_t p) { return in_use(c.host, p); }, keep);
  if (!victims.empty() &&
      c.host->release_pages(c.host->ctx, victims.data(), static_cast<int32_t>(victims.size())) != DRIFT_OK)
    report(c.host, DRIFT_LOG_ERROR, "release_pages refused pages the index held; they return at the next on_evict");
  return c.index.size() < c.capacity;
}

// The node after which the offered pages go: the request's last offered block when the offer
// continues it, else the cached chain through `prefix` (kRoot for block 0); nullopt when part
// of the prefix is no longer cached (the pages could never be matched).
std::optional<NodeId> parent_for(PrefixCache& c, const RequestState& state, const drift_full_pages_t* full) {
  if (full->first_block == 0) return kRoot;
  if (state.blocks == full->first_block && c.index.contains(state.tail)) return state.tail;
  const int64_t bs = c.index.block_size();
  const std::span<const drift::prefix_cache::Token> prefix(full->prefix, static_cast<size_t>(full->first_block * bs));
  const std::vector<NodeId> path = c.index.walk(prefix, state.salt, full->first_block);
  if (static_cast<int64_t>(path.size()) != full->first_block) return std::nullopt;
  return path.back();
}

drift_status_t on_pages_full(void* instance, const drift_full_pages_t* full, bool* keep) {
  PrefixCache& c = self(instance);
  return drift::plugin::guard(c.host, kPlugin, "on_pages_full", [&] {
    auto request = c.requests.find(full->seq_id);
    if (request == c.requests.end()) return DRIFT_OK;  // no salt known: keep nothing
    RequestState& state = request->second;
    std::optional<NodeId> parent = parent_for(c, state, full);
    if (!parent) return DRIFT_OK;
    const int64_t bs = c.index.block_size();
    int32_t i = 0;
    for (; i < full->num_pages; ++i) {
      const std::span<const drift::prefix_cache::Token> block(full->tokens + i * bs, static_cast<size_t>(bs));
      if (auto cached = c.index.child(*parent, block, state.salt)) {  // another request's page holds it
        c.index.touch(std::span(&*cached, 1));
        parent = *cached;
        continue;
      }
      if (!make_room(c, *parent)) break;
      parent = c.index.insert(*parent, block, state.salt, full->pages[i]);
      keep[i] = true;
    }
    state.tail = *parent;
    state.blocks = full->first_block + i;
    return DRIFT_OK;
  });
}

drift_status_t on_evict(void* instance, int32_t wanted, drift_page_id_t* released, int32_t max_released,
                        int32_t* num_released) {
  PrefixCache& c = self(instance);
  return drift::plugin::guard(c.host, kPlugin, "on_evict", [&] {
    const auto victims =
        c.index.evict(std::min(wanted, max_released), [&](drift_page_id_t p) { return in_use(c.host, p); });
    std::copy(victims.begin(), victims.end(), released);
    *num_released = static_cast<int32_t>(victims.size());
    return DRIFT_OK;
  });
}

constexpr drift_plugin_t kDescriptor = [] {
  drift_plugin_t d{};
  d.struct_size = sizeof(drift_plugin_t);
  d.abi_major = DRIFT_ABI_MAJOR;
  d.abi_minor = DRIFT_ABI_MINOR;
  d.name = "prefix_cache";
  d.version = "1.0.0";
  d.kinds = DRIFT_KIND_CACHE_MANAGER;
  d.create = create;
  d.destroy = destroy;
  d.on_request_start = on_request_start;
  d.on_request_finish = on_request_finish;
  d.on_prefix_match = on_prefix_match;
  d.on_pages_full = on_pages_full;
  d.on_evict = on_evict;
  return d;
}();

}  // namespace

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t* /*host*/,
                                                               uint32_t host_abi_version) {
  return DRIFT_ABI_VERSION_MAJOR(host_abi_version) == DRIFT_ABI_MAJOR ? &kDescriptor : nullptr;
}
