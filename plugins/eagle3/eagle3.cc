// eagle3: the EAGLE-3 draft provider (seeds 000, 002, 004; ../shared/tools/eagle3/README.md).
// A one-layer draft head reads the target's hidden states at three layers (declared through
// on_declare_needs and read in on_target_forward after every forward, prefill chunks included),
// keeps its own KV per request in pages, and proposes a chain, a static tree or a dynamic tree each
// step. What it holds on the device (weights, workspace, KV pool) is sized before it is created
// and declared to the engine (declare_memory), which budgets it with its KV pool.
// Everything runs through the host's compute services, so the same plugin drafts on the CPU
// backend (tests, CI) and on CUDA; it uses only the public header, as a third party would.
#include <algorithm>
#include <cstring>
#include <new>

#include "eagle3_state.h"
#include "head_config.h"
#include "head_weights.h"
#include "inspect.h"

namespace eagle3 {

Plugin::Plugin(const drift_host_api_t* api, const std::string& settings_toml)
    : host(api), settings(read_settings(host, settings_toml)) {
  HeadConfig config = read_head_config(settings.checkpoint, host.model());
  plan = plan_memory(config, settings, host.model(), settings.checkpoint);
  HeadWeights weights = load_head_weights(host, settings.checkpoint, config);
  workspace = std::make_unique<Workspace>(host, plan.workspace);
  kv_pool = std::make_unique<DraftKvPool>(host, plan.kv_pages(host.model().num_pages), plan.kv_block_size,
                                          config.num_kv_heads, config.head_dim);
  for (int32_t id : config.aux_layer_ids)
    if (id > 0 && std::find(capture_layers.begin(), capture_layers.end(), id - 1) == capture_layers.end())
      capture_layers.push_back(id - 1);  // aux id i reads the stream entering layer i = layer i-1's output
  head = std::make_unique<DraftHead>(host, std::move(config), std::move(weights));
}

namespace {

Plugin& plugin(void* instance) { return *static_cast<Plugin*>(instance); }

constexpr const char* kPlugin = "eagle3";

// This plugin needs ABI 1.2's hook, services and settings, and 1.4's paged attention over its own
// K/V and step limits in model_info.
bool host_supports(const drift_host_api_t* host) {
  return host && host->abi_minor >= 4 && DRIFT_HAS_FIELD(host, drift_host_api_t, get_setting_path) &&
         host->get_setting_path && host->model_weight && host->add && host->concat && host->hidden_states &&
         host->sequence_tokens && host->attention && host->gemm && host->embedding && host->rms_norm && host->rope &&
         host->silu_mul && host->softmax && host->top_k && host->load_safetensors;
}

drift_status_t create(const drift_host_api_t* host, const char* settings_toml, void** instance) {
  if (!host_supports(host)) {
    if (host && host->log)
      host->log(host->ctx, DRIFT_LOG_ERROR,
                "eagle3: the host lacks ABI 1.4 (paged attention over a plugin's K/V) or 1.2 services (model_weight, "
                "add, concat, ...)");
    return DRIFT_ERROR_NOT_SUPPORTED;
  }
  return drift::plugin::guard(host, kPlugin, "create",
                              [&] { *instance = new Plugin(host, settings_toml ? settings_toml : ""); });
}

// Before create: the memory plan from the settings, the head's config and checkpoint header, and
// the engine's limits (memory_plan.h).
drift_status_t declare_memory(const drift_host_api_t* host, const char* settings_toml, drift_memory_needs_t* needs) {
  if (!host_supports(host)) return DRIFT_ERROR_NOT_SUPPORTED;
  return drift::plugin::guard(host, kPlugin, "declare_memory", [&] {
    const Host h(host);
    const Settings settings = read_settings(h, settings_toml ? settings_toml : "");
    const MemoryPlan plan =
        plan_memory(read_head_config(settings.checkpoint, h.model()), settings, h.model(), settings.checkpoint);
    needs->fixed_bytes = plan.fixed_bytes();
    needs->bytes_per_kv_token = plan.kv_bytes_per_token;
  });
}

void destroy(void* instance) { delete static_cast<Plugin*>(instance); }

drift_status_t on_declare_needs(void* instance, drift_needs_t* needs) {
  Plugin& p = plugin(instance);
  if (static_cast<int32_t>(p.capture_layers.size()) > needs->max_capture_layers) return DRIFT_ERROR_INVALID_ARGUMENT;
  std::copy(p.capture_layers.begin(), p.capture_layers.end(), needs->capture_layers);
  needs->num_capture_layers = static_cast<int32_t>(p.capture_layers.size());
  return DRIFT_OK;
}

drift_status_t on_request_start(void* instance, const drift_request_info_t* request) {
  Plugin& p = plugin(instance);
  return drift::plugin::guard(p.host.api(), kPlugin, "on_request_start", [&] {
    p.requests.erase(request->seq_id);  // a resumed request starts over
    const bool drafts = DRIFT_HAS_FIELD(request, drift_request_info_t, provides_drafts) && request->provides_drafts;
    if (drafts) p.requests[request->seq_id] = std::make_unique<Request>(*p.kv_pool);
  });
}

drift_status_t on_request_finish(void* instance, drift_seq_id_t seq, int32_t) {
  plugin(instance).requests.erase(seq);
  return DRIFT_OK;
}

drift_status_t on_target_forward(void* instance, const drift_step_t* step, drift_forward_rows_t* const* rows,
                                 size_t n) {
  Plugin& p = plugin(instance);
  p.host.set_stream(step->stream);
  const drift_status_t status = drift::plugin::guard(p.host.api(), kPlugin, "on_target_forward",
                                                     [&] { extend_requests(p, step->step, rows, n); });
  if (status != DRIFT_OK)  // the host fails these sequences: their state must go now
    for (size_t i = 0; i < n; ++i) p.requests.erase(rows[i]->seq_id);
  return status;
}

drift_status_t on_propose(void* instance, const drift_step_t* step, drift_draft_tree_t* const* trees, size_t n) {
  Plugin& p = plugin(instance);
  p.host.set_stream(step->stream);
  const drift_status_t status =
      drift::plugin::guard(p.host.api(), kPlugin, "on_propose", [&] { propose_trees(p, step->step, trees, n); });
  if (status != DRIFT_OK)
    for (size_t i = 0; i < n; ++i) p.requests.erase(trees[i]->seq_id);
  return status;
}

drift_status_t draft_logits(void* instance, drift_seq_id_t seq, float* out, int64_t cap, int64_t* rows,
                            int64_t* vocab) {
  Plugin& p = plugin(instance);
  auto it = p.requests.find(seq);
  if (it == p.requests.end() || !rows || !vocab) return DRIFT_ERROR_NOT_FOUND;
  const Request& r = *it->second;
  *rows = r.logit_rows;
  *vocab = p.head->draft_vocab();
  if (out && cap >= static_cast<int64_t>(r.logits.size()))
    std::memcpy(out, r.logits.data(), r.logits.size() * sizeof(float));
  return DRIFT_OK;
}

constexpr eagle3_inspect_t kInspect = {sizeof(eagle3_inspect_t), &draft_logits};

const void* get_extension(void*, const char* key) {
  return key && std::strcmp(key, EAGLE3_INSPECT_KEY) == 0 ? &kInspect : nullptr;
}

constexpr drift_plugin_t kDescriptor = {
    .struct_size = sizeof(drift_plugin_t),
    .abi_major = DRIFT_ABI_MAJOR,
    .abi_minor = DRIFT_ABI_MINOR,
    .name = "eagle3",
    .version = "1.0.0",
    .kinds = DRIFT_KIND_DRAFT_PROVIDER,
    .create = &create,
    .destroy = &destroy,
    .get_extension = &get_extension,
    .on_declare_needs = &on_declare_needs,
    .on_request_start = &on_request_start,
    .on_request_finish = &on_request_finish,
    .on_accept = nullptr,
    .on_rewind = nullptr,
    .on_propose = &on_propose,
    .on_choose_kv_view = nullptr,
    .on_prefix_match = nullptr,
    .on_pages_full = nullptr,
    .on_evict = nullptr,
    .on_target_forward = &on_target_forward,
    .declare_memory = &declare_memory,
};

}  // namespace
}  // namespace eagle3

extern "C" DRIFT_EXPORT const drift_plugin_t* drift_plugin_get(const drift_host_api_t*, uint32_t host_abi_version) {
  // Needs a 1.x host; create() checks that it is new enough (1.4) to have every service used.
  return DRIFT_ABI_VERSION_MAJOR(host_abi_version) == DRIFT_ABI_MAJOR ? &eagle3::kDescriptor : nullptr;
}
