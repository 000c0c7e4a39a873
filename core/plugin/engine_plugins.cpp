#include "core/plugin/engine_plugins.h"

#include <algorithm>


#include "core/plugin/host_services.h"

namespace drift {

EnginePlugins::EnginePlugins(const EngineConfig& config, const ModelConfig& model, KVCacheManager& kv,
                             SequenceLookup lookup, const ServiceInstaller& install_services) : kv_(kv) {
  auto& cb = host_.callbacks();
  // Engine-state services: a sequence's tokens and its block table, read-only views valid
  // until the calling hook returns.
  cb.sequence_tokens = [lookup](drift_seq_id_t id, const drift_token_t** tokens, int64_t* n) -> drift_status_t {
    const Sequence* seq = lookup(id);
    if (!seq) return DRIFT_ERROR_INVALID_ARGUMENT;
    static thread_local std::vector<drift_token_t> joined;
    joined.assign(seq->prompt.begin(), seq->prompt.end());
    joined.insert(joined.end(), seq->output.begin(), seq->output.end());
    *tokens = joined.data();
    *n = static_cast<int64_t>(joined.size());
    return DRIFT_OK;
  };
  cb.block_table = [lookup, &kv](drift_seq_id_t id, const drift_page_id_t** pages, int64_t* num_pages,
                                 int64_t* num_tokens) -> drift_status_t {
    const Sequence* seq = lookup(id);
    if (!seq || seq->kv < 0 || !kv.has_sequence(seq->kv)) return DRIFT_ERROR_INVALID_ARGUMENT;
    const auto& table = kv.block_table(seq->kv);
    *pages = table.data();
    *num_pages = static_cast<int64_t>(table.size());
    *num_tokens = seq->num_computed;
    return DRIFT_OK;
  };
  cb.page_info = [&kv](drift_page_id_t page, drift_page_info_t* info) -> drift_status_t {
    if (page < 0 || page >= kv.num_pages()) return DRIFT_ERROR_INVALID_ARGUMENT;
    info->ref_count = kv.ref_count(page);
    info->num_tokens = info->ref_count > 0 ? static_cast<int32_t>(kv.block_size()) : 0;
    return DRIFT_OK;
  };
  if (install_services) install_services(cb);
  host_.set_model_info(make_model_info(model, kv.block_size(), kv.num_pages(), DRIFT_DEVICE_CPU, DRIFT_DTYPE_F32));
  host_.load_all(config.plugins);
  const bool speculate = config.speculative.enabled;
  host_.select(speculate ? config.speculative.draft_provider : "", config.speculative.verification);
  max_draft_tokens_ = speculate ? config.speculative.max_draft_tokens : 0;
}

EnginePlugins::~EnginePlugins() { release(host_.held_pages()); }

void EnginePlugins::release(const std::vector<drift_page_id_t>& pages) {
  for (drift_page_id_t page : pages) kv_.release_page(page);
}

RequestInfo EnginePlugins::request_info(const Sequence& seq) const {
  static thread_local std::vector<drift_token_t> tokens;
  tokens.assign(seq.prompt.begin(), seq.prompt.end());
  tokens.insert(tokens.end(), seq.output.begin(), seq.output.end());
  RequestInfo info;
  info.seq = seq.id;
  info.tokens = tokens;
  info.num_prompt_tokens = static_cast<int64_t>(seq.prompt.size());
  info.num_cached_tokens = seq.num_computed;
  info.max_new_tokens = seq.params.max_new_tokens;
  info.temperature = seq.params.temperature;
  info.resumed = resumed_.count(seq.id) > 0;
  return info;
}

int64_t EnginePlugins::match_prefix(Sequence& seq) {
  // Leave at least the last token to compute: its logits give the next token.
  // Asked again on every admission attempt: an earlier, failed attempt's answer is stale.
  offered_blocks_[seq.id] = 0;
  const auto max_pages = static_cast<int32_t>((seq.total_len() - 1) / kv_.block_size());
  if (max_pages <= 0) return 0;
  const std::vector<drift_page_id_t> pages = host_.prefix_match(request_info(seq), max_pages);
  if (pages.empty()) return 0;
  kv_.adopt_pages(seq.kv, pages);
  offered_blocks_[seq.id] = static_cast<int64_t>(pages.size());  // already cached: not offered again
  return static_cast<int64_t>(pages.size()) * kv_.block_size();
}

void EnginePlugins::admitted(Sequence& seq) {
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
  const int64_t before = kv_.num_free_pages();
  release(host_.evict(static_cast<int32_t>(wanted)));
  return kv_.num_free_pages() - before;
}

void EnginePlugins::before_forward(int64_t step, const std::vector<Sequence*>& decoding) {
  StepInfo info;
  info.step = step;
  if (host_.has_draft_provider() && max_draft_tokens_ > 0) {
    std::vector<DraftRequest> requests;
    for (const Sequence* seq : decoding) requests.push_back({seq->id, static_cast<int32_t>(max_draft_tokens_)});
    for (const DraftTree& tree : host_.propose(info, requests)) {
      if (tree.tokens.empty()) continue;
      speculation_.proposals++;
      speculation_.draft_tokens += static_cast<int64_t>(tree.tokens.size());
    }
  }
  std::vector<KvViewRequest> views;
  for (const Sequence* seq : decoding)
    views.push_back({seq->id, static_cast<int32_t>(kv_.block_table(seq->kv).size())});
  if (views.empty()) return;
  for (const KvView& view : host_.choose_kv_view(info, views)) (view.full ? speculation_.full_views : speculation_.partial_views)++;
}

void EnginePlugins::committed(const Sequence& seq, const std::vector<int32_t>& tokens) {
  if (!tokens.empty() && started_.count(seq.id)) host_.accept(seq.id, tokens);
}

void EnginePlugins::offer_full_pages(const Sequence& seq) {
  if (!started_.count(seq.id) || seq.kv < 0) return;
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
  for (drift_page_id_t page : host_.pages_full(full)) kv_.retain_page(page);
  offered = full_blocks;
}

void EnginePlugins::finished(const Sequence& seq) {
  offered_blocks_.erase(seq.id);
  resumed_.erase(seq.id);
  if (!started_.erase(seq.id)) return;
  HookFinishReason reason = HookFinishReason::Error;
  switch (seq.finish_reason) {
    case FinishReason::Stop: reason = HookFinishReason::Stop; break;
    case FinishReason::Length: reason = HookFinishReason::Length; break;
    case FinishReason::Abort: reason = HookFinishReason::Abort; break;
    default: break;
  }
  host_.request_finish(seq.id, reason);
}

}  // namespace drift
