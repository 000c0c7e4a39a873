#include "core/plugin/engine_plugins.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "core/plugin/host_services.h"

namespace drift {
namespace {

// A configured plugin is part of the setup the user asked for: when it cannot be loaded the engine
// does not start (an A/B run silently missing its strategy would measure the wrong thing), unless
// its [[plugins]] entry says optional = true, which keeps the one-[fallback]-line behaviour.
void require_loaded(const std::vector<PluginEntry>& entries, const std::vector<PluginInfo>& loaded) {
  for (size_t i = 0; i < entries.size() && i < loaded.size(); ++i)
    if (!entries[i].optional && !loaded[i].enabled)
      fail("plugin '{}' could not be loaded: {} (mark its [[plugins]] entry optional = true to run without it)",
           loaded[i].name, loaded[i].error);
}

// The plugins as preload_plugins leaves them: loaded by from_config before it sized the pool, or
// here for an engine built around its own executor (its pool is sized already, so what the
// plugins declare only caps them).
std::unique_ptr<PluginHost> loaded_plugins(std::unique_ptr<PluginHost> preloaded, const EngineConfig& config,
                                           const ModelConfig& model, const EngineParts& parts) {
  if (preloaded) return preloaded;
  PluginMemory declared;
  return preload_plugins(
      config,
      engine_model_info(config, model, parts.special, parts.kv.block_size(), 0, parts.device, parts.activation_dtype),
      declared);
}

}  // namespace

drift_model_info_t engine_model_info(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                                     int64_t block_size, int64_t num_pages, Device device, DType activation_dtype) {
  drift_model_info_t info =
      make_model_info(model, special, block_size, num_pages, to_drift_device(device), to_drift_dtype(activation_dtype));
  info.max_batch_size = config.engine.max_batch_size;
  info.max_draft_tokens = config.speculative.max_draft_tokens;
  return info;
}

std::unique_ptr<PluginHost> preload_plugins(const EngineConfig& config, const drift_model_info_t& info,
                                            PluginMemory& memory) {
  auto host = std::make_unique<PluginHost>();
  host->set_model_info(info);
  host->load_all(config.plugins, /*create=*/false);
  require_loaded(config.plugins, host->plugins());
  memory = host->declare_memory(config.plugins);
  require_loaded(config.plugins, host->plugins());
  return host;
}

EnginePlugins::EnginePlugins(const EngineConfig& config, const ModelConfig& model, EngineParts parts,
                             const ServiceInstaller& install_services, std::unique_ptr<PluginHost> preloaded)
    : kv_(parts.kv),
      executor_(parts.executor),
      stream_(parts.stream),
      state_(parts.lookup, parts.kv, parts.scheduler, parts.executor),
      owned_host_(loaded_plugins(std::move(preloaded), config, model, parts)),
      host_(*owned_host_),
      cache_metrics_(parts.cache_metrics),
      draft_timing_(parts.draft_timing) {
  state_.install(host_.callbacks());
  state_.set_head_dim(model.head_dim);
  host_.callbacks().release_page = [this](drift_page_id_t page) { evicted({page}); };
  if (install_services) install_services(host_.callbacks());
  host_.set_model_info(engine_model_info(config, model, parts.special, kv_.block_size(), kv_.num_pages(), parts.device,
                                         parts.activation_dtype));
  host_.create_all(config.plugins);
  require_loaded(config.plugins, host_.plugins());
  host_.select(config.speculative.enabled ? config.speculative.draft_provider : "", config.speculative.verification,
               config.speculative.enabled ? config.speculative.fallback_provider : "");
  state_.set_capture_layers(host_.capture_layers());
  parts.executor.set_capture_layers(host_.capture_layers());
}

EnginePlugins::~EnginePlugins() { release(host_.held_pages()); }

void EnginePlugins::release(const std::vector<drift_page_id_t>& pages) {
  for (drift_page_id_t page : pages) kv_.release_page(page);
}

int64_t EnginePlugins::evicted(const std::vector<drift_page_id_t>& pages) {
  const int64_t before = kv_.num_free_pages();
  release(pages);
  cache_metrics_.evicted_pages += static_cast<int64_t>(pages.size());
  cache_metrics_.pages_held = host_.num_held_pages();
  return kv_.num_free_pages() - before;
}

bool EnginePlugins::caches(const Sequence& seq) const { return seq.params.prefix_cache && host_.has_cache_manager(); }

RequestInfo EnginePlugins::request_info(const Sequence& seq) {
  request_tokens_.assign(seq.prompt.begin(), seq.prompt.end());
  request_tokens_.insert(request_tokens_.end(), seq.output.begin(), seq.output.end());
  RequestInfo info;
  info.seq = seq.id;
  info.tokens = request_tokens_;
  info.num_prompt_tokens = static_cast<int64_t>(seq.prompt.size());
  info.num_cached_tokens = seq.num_computed;
  info.max_new_tokens = seq.params.max_new_tokens;
  info.temperature = seq.params.temperature;
  info.resumed = resumed_.count(seq.id) > 0;
  info.cache_salt = seq.params.cache_salt;
  info.speculates = seq.speculate;
  info.draft_provider = seq.draft_provider;
  return info;
}

int64_t EnginePlugins::match_prefix(Sequence& seq) {
  // Leave at least the last token to compute: its logits give the next token.
  // Asked again on every admission attempt: an earlier, failed attempt's answer is stale.
  offered_blocks_[seq.id] = 0;
  if (!caches(seq)) return 0;
  const auto max_pages = static_cast<int32_t>((seq.total_len() - 1) / kv_.block_size());
  if (max_pages <= 0) return 0;
  const std::vector<drift_page_id_t> pages = host_.prefix_match(request_info(seq), max_pages);
  if (pages.empty()) return 0;
  // With sliding-window layers, only as many as the window blocks kept with them allow.
  const int64_t adopted = kv_.adopt_pages(seq.kv, pages);
  offered_blocks_[seq.id] = adopted;  // already cached: not offered again
  return adopted * kv_.block_size();
}

void EnginePlugins::admitted(Sequence& seq) {
  if (admission_check_) admission_check_(seq);
  if (caches(seq)) {
    // What match_prefix adopted (a parallel sample's prompt shared by a sibling is no cache hit).
    const int64_t hit = offered_blocks_[seq.id] * kv_.block_size();
    cache_metrics_.queries++;
    cache_metrics_.hits += hit > 0 ? 1 : 0;
    cache_metrics_.query_tokens += seq.total_len();
    cache_metrics_.hit_tokens += hit;
    seq.stats.cached_tokens += hit;
  }
  host_.request_start(request_info(seq));
  started_.insert(seq.id);
  resumed_.erase(seq.id);
}

void EnginePlugins::preempted(Sequence& seq) {
  if (started_.erase(seq.id)) host_.request_finish(seq.id, HookFinishReason::Preempted);
  offered_blocks_.erase(seq.id);
  resumed_[seq.id] = true;
}

int64_t EnginePlugins::reclaim(int64_t wanted) {
  if (wanted <= 0) return 0;
  return evicted(host_.evict(static_cast<int32_t>(wanted)));
}

int64_t EnginePlugins::reclaim_to_unblock(int64_t wanted) {
  if (wanted <= 0) return 0;
  return evicted(host_.evict(static_cast<int32_t>(wanted), PluginHost::Eviction::Required));
}

int64_t EnginePlugins::release_all_cached() {
  const int64_t held = host_.num_held_pages();
  return held > 0 ? reclaim_to_unblock(held) : 0;
}

void EnginePlugins::after_commit(int64_t step, const SchedulerOutput& scheduled,
                                 const std::vector<std::vector<int32_t>>& accepted) {
  keep_committed_rows(scheduled, accepted);
  std::vector<ForwardRows> rows;
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    const Sequence& seq = *chunk.seq;
    if (seq.finished() || !started_.count(seq.id)) continue;
    const int64_t count = chunk.draft.empty() ? chunk.count : 1 + static_cast<int64_t>(accepted[c].size());
    rows.push_back({seq.id, chunk.start, count, seq.total_len()});
  }
  if (rows.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  host_.target_forward(StepInfo{step, stream_}, rows);
  draft_timing_.forward_hook_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void EnginePlugins::keep_committed_rows(const SchedulerOutput& scheduled,
                                        const std::vector<std::vector<int32_t>>& accepted) {
  // Rows only address captured hidden states: without capture layers there is nothing to keep.
  if (state_.capture_layers().empty()) return;
  std::vector<int32_t> rows;  // row i of the reordered capture = old row rows[i]
  bool moved = false;
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    const auto first = static_cast<int32_t>(rows.size());
    for (int64_t i = 0; i < chunk.count; ++i) rows.push_back(first + static_cast<int32_t>(i));
    if (chunk.draft.empty()) continue;
    // A verify chunk's rows: the root, then node i at 1 + i.
    for (size_t j = 0; j < accepted[c].size(); ++j) {
      rows[first + 1 + j] = first + 1 + accepted[c][j];
      moved |= accepted[c][j] != static_cast<int32_t>(j);
    }
    state_.keep_rows(chunk.seq->id, 1 + static_cast<int64_t>(accepted[c].size()));
  }
  if (moved) executor_.reorder_captured(rows);
}

void EnginePlugins::committed(const Sequence& seq, const std::vector<int32_t>& tokens, int64_t rewound) {
  if (!started_.count(seq.id)) return;
  if (!tokens.empty()) host_.accept(seq.id, tokens);
  host_.rewind(seq.id, rewound);
}

// Only committed KV is offered, and only once the request's whole prompt (with, when resumed,
// its earlier output) has been computed: a request aborted or preempted mid-prefill never
// offers a page (SGLang #38319 poisoned its radix cache with such pages), and neither do draft
// slots beyond num_computed or the partly filled tail page.
void EnginePlugins::offer_full_pages(const Sequence& seq) {
  if (!started_.count(seq.id) || seq.kv < 0 || !caches(seq)) return;
  if (seq.total_len() - seq.num_computed > 1) return;  // still in prefill
  const int64_t full_blocks = seq.num_computed / kv_.block_size();
  int64_t& offered = offered_blocks_[seq.id];
  if (full_blocks <= offered) return;
  const auto& table = kv_.block_table(seq.kv);
  std::vector<drift_token_t> tokens(seq.prompt.begin(), seq.prompt.end());
  tokens.insert(tokens.end(), seq.output.begin(), seq.output.end());
  const int64_t bs = kv_.block_size();
  FullPages full;
  full.seq = seq.id;
  full.first_block = offered;
  full.pages = std::span(table.data() + offered, full_blocks - offered);
  full.tokens = std::span(tokens.data() + offered * bs, (full_blocks - offered) * bs);
  full.prefix = std::span(tokens.data(), offered * bs);
  full.cache_salt = seq.params.cache_salt;
  const std::vector<drift_page_id_t> kept = host_.pages_full(full);
  // The kept pages come in table order: one walk finds each one's block.
  auto block = full.pages.begin();
  for (drift_page_id_t page : kept) {
    kv_.retain_page(page);
    // The page's window block too, while the window group still holds it (a cache hit ending
    // at this page needs the window's KV before it).
    block = std::find(block, full.pages.end(), page);
    if (block == full.pages.end()) block = std::find(full.pages.begin(), full.pages.end(), page);
    kv_.keep_window_of(page, seq.kv, full.first_block + (block - full.pages.begin()));
  }
  cache_metrics_.pages_held = host_.num_held_pages();
  offered = full_blocks;
}

void EnginePlugins::finished(const Sequence& seq) {
  offered_blocks_.erase(seq.id);
  resumed_.erase(seq.id);
  if (!started_.erase(seq.id)) {
    host_.forget(seq.id);  // e.g. aborted while waiting after a preemption: no hook is due
    return;
  }
  HookFinishReason reason = HookFinishReason::Error;
  switch (seq.finish_reason) {
    case FinishReason::Stop:
      reason = HookFinishReason::Stop;
      break;
    case FinishReason::Length:
      reason = HookFinishReason::Length;
      break;
    case FinishReason::Abort:
      reason = HookFinishReason::Abort;
      break;
    default:
      break;
  }
  host_.request_finish(seq.id, reason);
}

}  // namespace drift
