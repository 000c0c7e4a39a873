// PluginHost: loading, roles, fallback bookkeeping and the common (per-request) hooks.
// Speculation hooks: plugin_host_speculation.cpp; cache hooks: plugin_host_cache.cpp.
#include "core/plugin/plugin_host.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/plugin/full_verification.h"
#include "core/plugin/guarded_call.h"
#include "core/plugin/loaded_plugin.h"
#include "core/plugin/plugin_descriptor.h"
#include "core/plugin/plugin_search.h"

namespace drift {
namespace {

constexpr const char* kBuiltinPath = "<built-in>";

void fill_info(LoadedPlugin& p, const PluginEntry& entry) {
  if (entry.name.empty()) p.info.name = p.desc.name;  // `--plugin PATH`: the plugin names itself
  p.info.plugin_name = p.desc.name;
  p.info.version = p.desc.version;
  p.info.abi_major = p.desc.abi_major;
  p.info.abi_minor = p.desc.abi_minor;
  p.info.kinds = p.desc.kinds;
}

// The descriptor behind an entry: a built-in by name, else the library's entry point.
const drift_plugin_t* open_descriptor(const PluginEntry& entry, LoadedPlugin& p) {
  if (entry.path.empty()) {
    if (const drift_plugin_t* builtin = builtin_plugin(entry.name)) {
      p.info.path = kBuiltinPath;
      p.info.found = "built-in";
      return builtin;
    }
  }
  ResolvedPlugin resolved = resolve_plugin(entry);
  p.info.path = resolved.path;
  p.info.found = resolved.found;
  p.library = std::make_unique<PluginLibrary>(p.info.path);
  drift_plugin_get_fn get = p.library->entry_point();
  const drift_plugin_t* raw = nullptr;
  if (auto why = guarded_call([&] {
        raw = get(p.context->api(), DRIFT_ABI_VERSION);
        return DRIFT_OK;
      }))
    fail("{}: {}() {}", p.info.path, DRIFT_PLUGIN_ENTRY_POINT, *why);
  return raw;
}

void destroy_instance(LoadedPlugin& p) {
  if (!p.instance) return;
  if (auto why = guarded_call([&] {
        p.desc.destroy(p.instance);
        return DRIFT_OK;
      }))
    spdlog::error("plugin '{}': destroy {}", p.info.name, *why);
  p.instance = nullptr;
}

// Asks on_declare_needs; the layers must exist in the model.
void declare_needs(LoadedPlugin& p, int64_t num_layers) {
  if (!p.desc.on_declare_needs) return;
  std::vector<int32_t> layers(static_cast<size_t>(std::max<int64_t>(num_layers, 0)));
  drift_needs_t needs{};
  needs.struct_size = sizeof(needs);
  needs.capture_layers = layers.data();
  needs.max_capture_layers = static_cast<int32_t>(layers.size());
  if (auto why = guarded_call([&] { return p.desc.on_declare_needs(p.instance, &needs); }))
    fail("on_declare_needs {}", *why);
  if (needs.num_capture_layers < 0 || needs.num_capture_layers > needs.max_capture_layers)
    fail("on_declare_needs asked for {} capture layers; the model has {}", needs.num_capture_layers, num_layers);
  layers.resize(static_cast<size_t>(needs.num_capture_layers));
  for (int32_t layer : layers)
    if (layer < 0 || layer >= num_layers)
      fail("on_declare_needs asked for layer {}; the model has {} layers", layer, num_layers);
  p.capture_layers = std::move(layers);
}

void create_instance(LoadedPlugin& p, const std::string& settings, int64_t num_layers) {
  if (auto why = guarded_call([&] { return p.desc.create(p.context->api(), settings.c_str(), &p.instance); })) {
    p.instance = nullptr;  // a failed create owns nothing; destroy is not called
    // What the plugin logged as an error while creating is the reason a user needs to read.
    const std::string& said = p.context->last_error();
    fail("create {}{}", *why, said.empty() ? "" : ": " + said);
  }
  try {
    declare_needs(p, num_layers);
  } catch (const DriftError&) {
    destroy_instance(p);
    throw;
  }
}

// declare_memory's answer, checked: neither part negative, nor past what any machine holds.
PluginMemory ask_memory(LoadedPlugin& p, const std::string& settings) {
  drift_memory_needs_t needs{};
  needs.struct_size = sizeof(needs);
  p.context->set_memory_limit(0);  // nothing may be allocated before create
  const auto why = guarded_call([&] { return p.desc.declare_memory(p.context->api(), settings.c_str(), &needs); });
  p.context->set_memory_limit(-1);
  if (why) {
    const std::string& said = p.context->last_error();
    fail("{}{}", *why, said.empty() ? "" : ": " + said);
  }
  constexpr int64_t kMostBytes = int64_t{1} << 48;  // 256 TiB
  if (needs.fixed_bytes < 0 || needs.fixed_bytes > kMostBytes)
    fail("answered fixed_bytes = {}, outside 0..{}", needs.fixed_bytes, kMostBytes);
  if (needs.bytes_per_kv_token < 0 || needs.bytes_per_kv_token > (int64_t{1} << 30))
    fail("answered bytes_per_kv_token = {}, outside 0..{}", needs.bytes_per_kv_token, int64_t{1} << 30);
  return {needs.fixed_bytes, needs.bytes_per_kv_token};
}

std::string fallback_name(const PluginEntry& entry) {
  if (!entry.name.empty()) return entry.name;
  std::string stem = std::filesystem::path(entry.path).stem().string();
  return stem.starts_with("lib") ? stem.substr(3) : stem;
}

}  // namespace

PluginHost::PluginHost(HostCallbacks callbacks) : state_(std::make_unique<HostState>()) {
  state_->callbacks = std::move(callbacks);
  state_->model_info.struct_size = sizeof(drift_model_info_t);
  state_->model_info.bos_token_id = -1;
  full_policy_ = std::make_unique<LoadedPlugin>();
  full_policy_->info.name = "full";
  load_one_into(*full_policy_, PluginEntry{"full", "", "", false, ""});
  verification_ = full_policy_.get();
}

PluginHost::~PluginHost() {
  for (auto it = plugins_.rbegin(); it != plugins_.rend(); ++it) destroy_instance(**it);
  destroy_instance(*full_policy_);
}

void PluginHost::set_model_info(const drift_model_info_t& info) {
  state_->model_info = info;
  state_->model_info.struct_size = sizeof(drift_model_info_t);
}

HostCallbacks& PluginHost::callbacks() { return state_->callbacks; }

void PluginHost::load_all(const std::vector<PluginEntry>& entries, bool create) {
  for (const PluginEntry& entry : entries) {
    auto plugin = std::make_unique<LoadedPlugin>();
    plugin->info.name = fallback_name(entry);
    if (!entry.name.empty() && find(entry.name)) {
      plugin->info.error = fmt::format("plugin name '{}' appears twice in the config", entry.name);
      spdlog::warn("[fallback] plugin '{}' disabled for the engine: {}", entry.name, plugin->info.error);
    } else {
      load_one_into(*plugin, entry, create);
    }
    plugins_.push_back(std::move(plugin));
  }
}

PluginMemory PluginHost::declare_memory(const std::vector<PluginEntry>& entries) {
  PluginMemory total;
  for (size_t i = 0; i < plugins_.size() && i < entries.size(); ++i) {
    LoadedPlugin& p = *plugins_[i];
    if (!p.info.enabled || !p.desc.declare_memory) continue;
    try {
      p.memory = ask_memory(p, entries[i].settings_toml);
      p.declared_memory = true;
    } catch (const DriftError& e) {
      disable(p, "declare_memory", e.what());
      continue;
    }
    total.fixed_bytes += p.memory.fixed_bytes;
    total.bytes_per_kv_token += p.memory.bytes_per_kv_token;
    spdlog::info("plugin '{}' will hold {:.1f} MiB, and {} bytes per KV token", p.info.name,
                 p.memory.fixed_bytes / 1048576.0, p.memory.bytes_per_kv_token);
  }
  return total;
}

void PluginHost::create_all(const std::vector<PluginEntry>& entries) {
  const drift_model_info_t& info = state_->model_info;
  for (size_t i = 0; i < plugins_.size() && i < entries.size(); ++i) {
    LoadedPlugin& p = *plugins_[i];
    if (!p.info.enabled || p.instance) continue;
    if (p.declared_memory)
      p.context->set_memory_limit(p.memory.fixed_bytes +
                                  p.memory.bytes_per_kv_token * info.num_pages * info.block_size);
    try {
      create_instance(p, entries[i].settings_toml, info.num_layers);
    } catch (const DriftError& e) {
      p.info.enabled = false;
      p.info.error = e.what();
      spdlog::warn("[fallback] plugin '{}' disabled for the engine: {}", p.info.name, p.info.error);
    }
  }
}

void PluginHost::load_one_into(LoadedPlugin& p, const PluginEntry& entry, bool create) {
  try {
    p.context = std::make_unique<PluginContext>(p.info.name, entry.settings_toml, state_.get(), entry.base_dir);
    p.context->set_page_releaser([this, &p](std::span<const drift_page_id_t> pages) { return release_held(p, pages); });
    const drift_plugin_t* raw = open_descriptor(entry, p);
    p.desc = adopt_descriptor(raw, p.info.path);
    fill_info(p, entry);
    if (create) create_instance(p, entry.settings_toml, state_->model_info.num_layers);
    p.info.enabled = true;
    spdlog::info("plugin '{}' {} (ABI {}.{}, {}) loaded from {}", p.info.name, p.info.version, p.info.abi_major,
                 p.info.abi_minor, kinds_string(p.info.kinds), p.info.path);
  } catch (const DriftError& e) {
    p.info.error = e.what();
    spdlog::warn("[fallback] plugin '{}' disabled for the engine: {}", p.info.name, p.info.error);
  }
}

void PluginHost::select(const std::string& draft_provider, const std::string& verification_policy,
                        const std::string& fallback_provider) {
  auto pick = [&](const std::string& name, drift_kinds_t kind, const char* role) -> LoadedPlugin* {
    LoadedPlugin* p = find(name);
    std::string why = !p                                           ? "is not configured"
                      : (p->desc.kinds & kind) || !p->info.enabled ? ""
                                                                   : "is not a " + std::string(role);
    if (why.empty()) return p;  // a plugin that failed at load already logged its [fallback]
    // A role given to a plugin that is missing or of the wrong kind is a broken setup, not a
    // run-time failure: running without the strategy would silently measure something else.
    fail("speculative: {} = \"{}\" {}", role, name, why);
  };
  draft_provider_ =
      draft_provider.empty() ? nullptr : pick(draft_provider, DRIFT_KIND_DRAFT_PROVIDER, "draft_provider");
  fallback_provider_ = fallback_provider.empty() || draft_provider.empty()
                           ? nullptr
                           : pick(fallback_provider, DRIFT_KIND_DRAFT_PROVIDER, "fallback_provider");
  verification_ = full_policy_.get();
  if (!verification_policy.empty() && verification_policy != "full")
    if (LoadedPlugin* p = pick(verification_policy, DRIFT_KIND_VERIFICATION_POLICY, "verification_policy"))
      verification_ = p;
}

std::vector<PluginInfo> PluginHost::plugins() const {
  std::vector<PluginInfo> out;
  for (const auto& p : plugins_) {
    out.push_back(p->info);
    if (!p->context) continue;
    out.back().memory_limit = p->context->memory_limit();
    out.back().memory_peak = p->context->peak_bytes();
  }
  return out;
}

std::vector<PluginInfo> PluginHost::builtin_plugins() {
  PluginHost host;
  return {host.full_policy_->info};
}

PluginHost::Extension PluginHost::extension(const std::string& plugin, const std::string& key) const {
  LoadedPlugin* p = find(plugin);
  if (!p || !p->info.enabled || !p->desc.get_extension) return {};
  const void* table = nullptr;
  if (auto why = guarded_call([&] {
        table = p->desc.get_extension(p->instance, key.c_str());
        return DRIFT_OK;
      })) {
    spdlog::error("plugin '{}': get_extension(\"{}\") {}", plugin, key, *why);
    return {};
  }
  return table ? Extension{table, p->instance} : Extension{};
}

bool PluginHost::has_draft_provider() const { return draft_provider_ && draft_provider_->info.enabled; }

bool PluginHost::is_draft_provider(const std::string& name) const {
  const LoadedPlugin* p = name.empty() ? draft_provider_ : find(name);
  return p && p->is(DRIFT_KIND_DRAFT_PROVIDER);
}

bool PluginHost::draft_provider_usable(const std::string& name, drift_seq_id_t seq) const {
  const LoadedPlugin* p = name.empty() ? draft_provider_ : find(name);
  return p && p->is(DRIFT_KIND_DRAFT_PROVIDER) && p->usable_for(seq);
}

void PluginHost::retire_draft_provider(const std::string& name, drift_seq_id_t seq) {
  LoadedPlugin* p = name.empty() ? draft_provider_ : find(name);
  if (!p || !p->is(DRIFT_KIND_DRAFT_PROVIDER) || !p->usable_for(seq)) return;
  if (p->desc.on_request_finish)
    call_for(*p, "on_request_finish", seq,
             [&] { return p->desc.on_request_finish(p->instance, seq, DRIFT_FINISH_ABORT); });
  p->disabled_requests.insert(seq);
  spdlog::debug("request {} decodes on without draft provider '{}' (adaptive speculation)", seq, p->info.name);
}

std::vector<int32_t> PluginHost::capture_layers() const {
  std::vector<int32_t> layers;
  for (const auto& p : plugins_)
    if (p->info.enabled) layers.insert(layers.end(), p->capture_layers.begin(), p->capture_layers.end());
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

LoadedPlugin* PluginHost::find(const std::string& name) const {
  for (const auto& p : plugins_)
    if (p->info.name == name) return p.get();
  return nullptr;
}

void PluginHost::fallback(LoadedPlugin& p, const char* hook, std::span<const drift_seq_id_t> seqs,
                          const std::string& reason) {
  p.disabled_requests.insert(seqs.begin(), seqs.end());
  spdlog::warn("[fallback] plugin '{}' hook {} {}; request{} {} continue{} without it", p.info.name, hook, reason,
               seqs.size() == 1 ? "" : "s", fmt::join(seqs, ", "), seqs.size() == 1 ? "s" : "");
}

void PluginHost::refuse_output(LoadedPlugin& p, const char* hook, drift_seq_id_t seq, const std::string& reason) {
  fallback(p, hook, std::span(&seq, 1), reason);
  if (!p.desc.on_request_finish) return;
  if (auto why = guarded_call([&] { return p.desc.on_request_finish(p.instance, seq, DRIFT_FINISH_ABORT); }))
    spdlog::warn("plugin '{}' hook on_request_finish {} (request {}, after its {} was refused)", p.info.name, *why, seq,
                 hook);
}

std::vector<drift_page_id_t> PluginHost::disable(LoadedPlugin& p, const char* hook, const std::string& reason) {
  p.info.enabled = false;
  p.info.error = fmt::format("hook {} {}", hook, reason);
  spdlog::warn("[fallback] plugin '{}' disabled for the engine: {}", p.info.name, p.info.error);
  std::vector<drift_page_id_t> pages;
  for (const auto& held : p.held_pages) pages.push_back(held.first);
  p.held_pages.clear();
  return pages;
}

bool PluginHost::call_for(LoadedPlugin& p, const char* hook, drift_seq_id_t seq,
                          const std::function<drift_status_t()>& call) {
  std::optional<std::string> why = guarded_call(call);
  if (why) fallback(p, hook, std::span(&seq, 1), *why);
  return !why;
}

bool PluginHost::provides_drafts(const LoadedPlugin& p, const RequestInfo& request) const {
  if (!request.speculates || !p.is(DRIFT_KIND_DRAFT_PROVIDER)) return false;
  if (!request.draft_provider.empty()) return p.info.name == request.draft_provider;
  return &p == draft_provider_ || &p == fallback_provider_;
}

const std::string& PluginHost::draft_provider_name() const {
  static const std::string none;
  return draft_provider_ ? draft_provider_->info.name : none;
}

std::map<std::string, std::string> PluginHost::plugin_stats() const {
  std::map<std::string, std::string> out;
  for (const auto& p : plugins_) {
    const Extension ext = extension(p->info.name, DRIFT_STATS_EXTENSION);
    if (!ext.table) continue;
    const auto* table = static_cast<const drift_stats_extension_t*>(ext.table);
    if (!DRIFT_HAS_FIELD(table, drift_stats_extension_t, stats_json)) continue;
    const char* json = nullptr;
    if (!guarded_call([&] {
          json = table->stats_json ? table->stats_json(ext.instance) : nullptr;
          return DRIFT_OK;
        }) &&
        json)
      out[p->info.name] = json;
  }
  return out;
}

void PluginHost::request_start(const RequestInfo& request) {
  drift_request_info_t info = to_c(request);
  for (auto& p : plugins_)
    if (p->usable_for(request.seq) && p->desc.on_request_start) {
      info.provides_drafts = provides_drafts(*p, request);
      call_for(*p, "on_request_start", request.seq, [&] { return p->desc.on_request_start(p->instance, &info); });
    }
}

void PluginHost::request_finish(drift_seq_id_t seq, HookFinishReason reason) {
  chain_tails_.erase(seq);
  for (auto& p : plugins_) {
    if (p->usable_for(seq) && p->desc.on_request_finish)
      call_for(*p, "on_request_finish", seq,
               [&] { return p->desc.on_request_finish(p->instance, seq, static_cast<int32_t>(reason)); });
    // A preempted request comes back: it stays without the plugins that failed it.
    if (reason != HookFinishReason::Preempted) p->disabled_requests.erase(seq);
  }
}

void PluginHost::forget(drift_seq_id_t seq) {
  chain_tails_.erase(seq);
  for (auto& p : plugins_) p->disabled_requests.erase(seq);
}

void PluginHost::accept(drift_seq_id_t seq, std::span<const drift_token_t> tokens) {
  for (auto& p : plugins_)
    if (p->usable_for(seq) && p->desc.on_accept)
      call_for(*p, "on_accept", seq, [&] { return p->desc.on_accept(p->instance, seq, tokens.data(), tokens.size()); });
}

void PluginHost::rewind(drift_seq_id_t seq, int64_t n) {
  if (n <= 0) return;  // the ABI promises on_rewind only for a real rewind
  for (auto& p : plugins_)
    if (p->usable_for(seq) && p->desc.on_rewind)
      call_for(*p, "on_rewind", seq, [&] { return p->desc.on_rewind(p->instance, seq, n); });
}

}  // namespace drift
