// specpv: SpecPV (arXiv 2512.02337) as a verification policy. Once a sequence is long, its
// drafts are verified against a partial view of its KV -- sink blocks, blocks retrieved per
// (layer, kv head) by query-aware scores, a recent window and the tokens committed since the
// last full verification -- as page lists into its own block table (no KV copies); a full
// verification runs when the buffer or the partial-step cap is reached, and refreshes the
// retrieval set from its own queries. Acceptance is the engine's: SpecPV only narrows what the
// verify forward attends to, so it is lossy by design (docs/specpv.md measures how much).
// It uses only the public header, as a third-party plugin would.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "drift/plugin.h"
#include "drift/plugin_helpers.hpp"
#include "inspect.h"
#include "retrieval.h"
#include "selection.h"
#include "settings.h"

namespace {

using Clock = std::chrono::steady_clock;

struct SequenceState {
  specpv::SequenceSummaries summaries;
  std::optional<specpv::Retrieval> retrieval;
  int64_t partial_steps = 0;     // since the last refresh
  bool refresh_pending = false;  // this step verifies fully and keeps its queries
};

struct Stats {
  int64_t partial_views = 0, full_views = 0, refresh_views = 0, refreshes = 0;
  int64_t pages_listed = 0;  // over the partial views' lists
  int64_t lists = 0;
  double refresh_seconds = 0.0;
  int64_t summarised_blocks = 0;
};

struct Plugin {
  const drift_host_api_t* host;
  specpv::Settings settings;
  drift_model_info_t model;
  std::map<drift_seq_id_t, std::unique_ptr<SequenceState>> seqs;
  specpv::Workspace work;
  Stats stats;
  std::string stats_text;
};

Plugin& plugin(void* instance) { return *static_cast<Plugin*>(instance); }

constexpr const char* kPlugin = "specpv";

drift_status_t create(const drift_host_api_t* host, const char* settings_toml, void** instance) {
  if (!host || !host->log) return DRIFT_ERROR_NOT_SUPPORTED;
  return drift::plugin::guard(host, kPlugin, "create", [&] {
    if (host->abi_minor < 3 || !DRIFT_HAS_FIELD(host, drift_host_api_t, page_scores) || !host->query_states ||
        !host->page_scores || !host->page_key_summary || !host->top_k)
      throw std::runtime_error("needs a host with ABI 1.3 (query_states, page_scores, page_key_summary, top_k)");
    const drift_model_info_t* model = host->model_info(host->ctx);
    specpv::Settings s = specpv::read_settings(settings_toml ? settings_toml : "");
    if (s.block_size != model->block_size)
      throw std::invalid_argument(
          "setting 'block_size' = " + std::to_string(s.block_size) +
          " must equal the engine's KV page size (kv_cache.block_size = " + std::to_string(model->block_size) + ")");
    *instance = new Plugin{host, s, *model, {}, {}, {}, {}};
  });
}

void destroy(void* instance) { delete static_cast<Plugin*>(instance); }

drift_status_t on_request_start(void* instance, const drift_request_info_t* request) {
  Plugin& p = plugin(instance);
  return drift::plugin::guard(p.host, kPlugin, "on_request_start", [&] {
    const int64_t tokens = request->num_tokens + std::max<int64_t>(request->max_new_tokens, 0) + 1;
    const int64_t blocks = (tokens + p.settings.block_size - 1) / p.settings.block_size + 1;
    p.seqs[request->seq_id] = std::make_unique<SequenceState>(
        SequenceState{specpv::SequenceSummaries(p.host, p.model, blocks), {}, 0, false});
  });
}

drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t) {
  plugin(instance).seqs.erase(seq);
  return DRIFT_OK;
}

// A partial view: one list per (layer, kv head) of the blocks selection chose, as page ids.
void write_partial(Plugin& p, const specpv::Retrieval& r, const drift_page_id_t* table, int64_t tail,
                   drift_kv_view_t& view) {
  view.mode = DRIFT_KV_VIEW_PAGES;
  view.per_kv_head = true;
  const int64_t lists = p.model.num_layers * p.model.num_kv_heads;
  for (int64_t l = 0; l < lists; ++l) {
    const std::vector<int64_t> blocks = specpv::view_blocks(p.settings, r, l, tail);
    if (static_cast<int64_t>(blocks.size()) > view.max_pages) throw std::logic_error("a list outgrows its buffer");
    for (size_t i = 0; i < blocks.size(); ++i)
      view.pages[l * view.max_pages + static_cast<int64_t>(i)] = table[blocks[i]];
    view.page_counts[l] = static_cast<int32_t>(blocks.size());
    p.stats.pages_listed += static_cast<int64_t>(blocks.size());
  }
  p.stats.lists += lists;
}

void choose_view(Plugin& p, SequenceState& st, drift_kv_view_t& view) {
  const drift_page_id_t* table = nullptr;
  int64_t pages = 0, computed = 0;
  drift::plugin::check(p.host->block_table(p.host->ctx, view.seq_id, &table, &pages, &computed), "block_table");
  const int64_t root = computed;  // positions before the root hold committed KV
  const int64_t tail = root / p.settings.block_size;
  if (tail > pages || pages > view.max_pages) throw std::logic_error("the block table does not cover the root");
  switch (specpv::choose(p.settings, st.retrieval ? &*st.retrieval : nullptr, root, st.partial_steps)) {
    case specpv::Verify::Full:
      p.stats.full_views++;
      return;  // the host preset FULL
    case specpv::Verify::Refresh:
      view.keep_queries = true;
      st.refresh_pending = true;
      p.stats.refresh_views++;
      return;
    case specpv::Verify::Partial:
      write_partial(p, *st.retrieval, table, tail, view);
      st.partial_steps++;
      p.stats.partial_views++;
      return;
  }
}

drift_status_t on_choose_kv_view(void* instance, const drift_step_t*, drift_kv_view_t* const* views, size_t n) {
  Plugin& p = plugin(instance);
  // An invariant a view breaks fails that sequence alone: the host verifies it fully from then on.
  for (size_t i = 0; i < n; ++i) {
    drift_kv_view_t& view = *views[i];
    auto it = p.seqs.find(view.seq_id);
    if (it == p.seqs.end()) continue;  // not started here: full
    view.status = drift::plugin::guard(p.host, kPlugin, "sequence " + std::to_string(view.seq_id),
                                       [&] { choose_view(p, *it->second, view); });
    if (view.status != DRIFT_OK) {
      view.mode = DRIFT_KV_VIEW_FULL;
      p.seqs.erase(it);
    }
  }
  return DRIFT_OK;
}

// After a refreshing full verification: the new retrieval set, from that forward's queries.
drift_status_t on_target_forward(void* instance, const drift_step_t* step, drift_forward_rows_t* const* rows,
                                 size_t n) {
  Plugin& p = plugin(instance);
  for (size_t i = 0; i < n; ++i) {
    auto it = p.seqs.find(rows[i]->seq_id);
    if (it == p.seqs.end() || !it->second->refresh_pending) continue;
    SequenceState& st = *it->second;
    rows[i]->status =
        drift::plugin::guard(p.host, kPlugin, "refresh of sequence " + std::to_string(rows[i]->seq_id), [&] {
          const auto start = Clock::now();
          const int64_t before = st.summaries.summarised_blocks();
          st.retrieval = st.summaries.refresh(rows[i]->seq_id, step ? step->stream : nullptr, p.settings, p.work);
          st.partial_steps = 0;
          st.refresh_pending = false;
          p.stats.refreshes++;
          p.stats.summarised_blocks += st.summaries.summarised_blocks() - before;
          p.stats.refresh_seconds += std::chrono::duration<double>(Clock::now() - start).count();
        });
    if (rows[i]->status != DRIFT_OK) p.seqs.erase(it);
  }
  return DRIFT_OK;
}

const char* stats_json(void* instance) {
  Plugin& p = plugin(instance);
  const Stats& s = p.stats;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"partial_views\": %lld, \"full_views\": %lld, \"refresh_views\": %lld, \"refreshes\": %lld, "
                "\"refresh_ms_mean\": %.4f, \"summarised_blocks\": %lld, \"pages_per_list_mean\": %.2f}",
                static_cast<long long>(s.partial_views), static_cast<long long>(s.full_views),
                static_cast<long long>(s.refresh_views), static_cast<long long>(s.refreshes),
                s.refreshes ? 1e3 * s.refresh_seconds / static_cast<double>(s.refreshes) : 0.0,
                static_cast<long long>(s.summarised_blocks),
                s.lists ? static_cast<double>(s.pages_listed) / static_cast<double>(s.lists) : 0.0);
  p.stats_text = buf;
  return p.stats_text.c_str();
}

constexpr drift_stats_extension_t kStats = {sizeof(drift_stats_extension_t), &stats_json};

int64_t inspect_retrieval(void* instance, drift_seq_id_t seq, int64_t list, int64_t* bounds, int64_t* blocks,
                          int64_t cap) {
  Plugin& p = plugin(instance);
  auto it = p.seqs.find(seq);
  if (it == p.seqs.end() || !it->second->retrieval) return -1;
  const specpv::Retrieval& r = *it->second->retrieval;
  if (list < 0 || list >= static_cast<int64_t>(r.retrieved.size())) return -1;
  bounds[0] = r.committed;
  bounds[1] = r.window_block;
  bounds[2] = r.buffer_block;
  const auto& chosen = r.retrieved[list];
  for (int64_t i = 0; i < cap && i < static_cast<int64_t>(chosen.size()); ++i) blocks[i] = chosen[i];
  return static_cast<int64_t>(chosen.size());
}

int64_t inspect_refreshes(void* instance) { return plugin(instance).stats.refreshes; }

constexpr specpv_inspect_t kInspect = {sizeof(specpv_inspect_t), &inspect_retrieval, &inspect_refreshes};

const void* get_extension(void*, const char* key) {
  if (!key) return nullptr;
  if (std::strcmp(key, DRIFT_STATS_EXTENSION) == 0) return &kStats;
  return std::strcmp(key, SPECPV_INSPECT_KEY) == 0 ? &kInspect : nullptr;
}

constexpr drift_plugin_t kDescriptor = {
    .struct_size = sizeof(drift_plugin_t),
    .abi_major = DRIFT_ABI_MAJOR,
    .abi_minor = DRIFT_ABI_MINOR,
    .name = "specpv",
    .version = "1.0.0",
    .kinds = DRIFT_KIND_VERIFICATION_POLICY,
    .create = &create,
    .destroy = &destroy,
    .get_extension = &get_extension,
    .on_declare_needs = nullptr,
    .on_request_start = &on_request_start,
    .on_request_finish = &on_request_finish,
    .on_accept = nullptr,  // lengths come from the block table
    .on_rewind = nullptr,
    .on_propose = nullptr,
    .on_choose_kv_view = &on_choose_kv_view,
    .on_prefix_match = nullptr,
    .on_pages_full = nullptr,
    .on_evict = nullptr,
    .on_target_forward = &on_target_forward,
    .declare_memory = nullptr,
};

}  // namespace

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t host_abi_version) {
  return DRIFT_ABI_VERSION_MAJOR(host_abi_version) == DRIFT_ABI_MAJOR ? &kDescriptor : nullptr;
}
