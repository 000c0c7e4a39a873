#pragma once
// PluginHost: loads the configured plugins and is the engine's only way to call them.
//
// The engine owns one PluginHost and calls its typed methods at the points of DESIGN.md's
// engine step (see the call order in drift/plugin.h). Every call into plugin code is guarded:
// an error status, an exception or an invalid result disables that plugin for the request(s)
// concerned with ONE "[fallback]" warning naming plugin, hook and reason, and the method
// returns what the engine would do without the plugin (no draft, a full KV view, no cache
// hit). A plugin that fails to load, validate or create is disabled for the engine's lifetime
// (also one "[fallback]" line) and the others load regardless. Not thread-safe: call from the
// engine thread only.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/plugin/host_services.h"
#include "core/plugin/page_chain.h"
#include "core/plugin/plugin_types.h"

namespace drift {

struct LoadedPlugin;

class PluginHost {
 public:
  explicit PluginHost(HostCallbacks callbacks = {});
  ~PluginHost();  // destroys instances in reverse config order, then unloads the libraries
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  // Engine description plugins read through host->model_info; set it before load_all (the
  // capture-layer and KV-view buffers are sized from it). Callbacks may be filled any time
  // before the first step.
  void set_model_info(const drift_model_info_t& info);
  HostCallbacks& callbacks();

  // Loads, validates and creates every entry in config order (entry.path, else a built-in
  // name, else a search by name: plugin_search.h), then asks on_declare_needs. With `create`
  // false (`drift plugins list` without a config) the libraries are only loaded and their
  // descriptors validated: no instance exists, no hook may be called.
  void load_all(const std::vector<PluginEntry>& entries, bool create = true);
  // Before the engine sizes its KV pool, after load_all(entries, false): asks each enabled
  // plugin with the hook what it will hold (ABI 1.4 declare_memory; model_info's num_pages is
  // 0 then) and returns the sum. A failing or absurd answer disables that plugin.
  PluginMemory declare_memory(const std::vector<PluginEntry>& entries);
  // Then, with model_info's num_pages set: creates the loaded plugins (and asks
  // on_declare_needs). A plugin that declared its memory may hold at most fixed_bytes +
  // bytes_per_kv_token * num_pages * block_size from now on.
  void create_all(const std::vector<PluginEntry>& entries);
  // The roles from [speculative]: the draft provider's entry name ("" = no speculation) and
  // the verification policy's ("full" = the built-in). An unknown name or a plugin of the
  // wrong kind is a broken setup: DriftError naming the role. A named plugin that failed to
  // load (already reported by load_all) leaves the role at its default.
  // `fallback_provider` ("" = none) drafts for [speculative]'s requests when their provider's
  // tree scores low (Speculator::draft_next), so it follows them too (provides_drafts).
  void select(const std::string& draft_provider, const std::string& verification_policy,
              const std::string& fallback_provider = "");

  // Configured plugins in config order, enabled or not (with the reason).
  std::vector<PluginInfo> plugins() const;
  // Each enabled plugin's own figures (DRIFT_STATS_EXTENSION), by entry name, as JSON text.
  std::map<std::string, std::string> plugin_stats() const;
  static std::vector<PluginInfo> builtin_plugins();
  // A plugin's get_extension(key): its table and the instance to pass to it; {} when the
  // plugin is unknown, disabled or does not know the key.
  struct Extension {
    const void* table = nullptr;
    void* instance = nullptr;
  };
  Extension extension(const std::string& plugin, const std::string& key) const;
  bool has_draft_provider() const;                 // selected and enabled
  const std::string& draft_provider_name() const;  // [speculative]'s provider ("" = none)
  bool has_cache_manager() const;                  // at least one enabled
  std::vector<int32_t> capture_layers() const;     // sorted union of the declared needs

  // ---- Common hooks: every enabled plugin, in config order -----------------------------
  // After admission, once the prefix pages (if any) are adopted.
  void request_start(const RequestInfo& request);
  // Finished, aborted or preempted. Forgets per-request disabling unless preempted.
  void request_finish(drift_seq_id_t seq, HookFinishReason reason);
  // The request ended without a hook being due (e.g. aborted while waiting after preemption):
  // forget which plugins had failed it.
  void forget(drift_seq_id_t seq);
  // Tokens committed this step (>= 1), then -- only if n > 0 -- the speculative positions
  // discarded. Call accept before rewind.
  void accept(drift_seq_id_t seq, std::span<const drift_token_t> tokens);
  void rewind(drift_seq_id_t seq, int64_t n);
  // After the step's commits: each plugin with on_target_forward gets the rows of the sequences
  // it is still enabled for (one batch call per plugin; a row's status fails that sequence).
  void target_forward(const StepInfo& step, std::span<const ForwardRows> rows);

  // ---- Speculation: the selected draft provider / verification policy -------------------
  // One tree per request, same order; empty for sequences without a draft. Each request goes to
  // its provider (one batch call per provider); a tree comes back only when it is valid
  // (validate_draft_tree under the request's budget, input fields untouched).
  std::vector<DraftTree> propose(const StepInfo& step, std::span<const DraftRequest> requests);
  // Whether `name` ("" = [speculative]'s) is a configured draft provider, enabled and still
  // usable for `seq` (no fallback disabled it for that request).
  bool draft_provider_usable(const std::string& name, drift_seq_id_t seq) const;
  // The request goes on without the draft provider `name` ("" = [speculative]'s): it is told the
  // request finished (DRIFT_FINISH_ABORT, so it drops its state) and gets no further hook for it.
  void retire_draft_provider(const std::string& name, drift_seq_id_t seq);
  bool is_draft_provider(const std::string& name) const;
  // One view per request, same order; full unless the policy chose (valid) page lists.
  std::vector<KvView> choose_kv_view(const StepInfo& step, std::span<const KvViewRequest> requests);

  // ---- Cache managers, in config order. The host tracks which pages each plugin holds ----
  // Pages holding the request's leading full blocks (at most max_pages): the first cache
  // manager with a hit wins. Read-only; may be asked again while admission waits. The engine
  // adopts the result (KVCacheManager::adopt_pages).
  std::vector<drift_page_id_t> prefix_match(const RequestInfo& request, int32_t max_pages);
  // Offers committed full pages; returns the pages the engine must retain_page() now, once
  // per entry (a page two cache managers keep appears twice).
  std::vector<drift_page_id_t> pages_full(const FullPages& pages);
  // Asks cache managers in order until `wanted` pages are given back; returns the pages the
  // engine must release_page(), once per entry. A cache manager that fails here is disabled
  // for the engine and all its pages are in the result. Required: the engine cannot proceed
  // without the pages, so one that gives back fewer than asked (min(wanted left, pages it
  // holds)) is disabled the same way.
  enum class Eviction { Optional, Required };
  std::vector<drift_page_id_t> evict(int32_t wanted, Eviction mode = Eviction::Optional);
  // Every page still held, once per holding plugin: release them at shutdown.
  std::vector<drift_page_id_t> held_pages() const;
  // Pages cache managers hold, counted once per holding plugin.
  int64_t num_held_pages() const;

 private:
  void load_one_into(LoadedPlugin& plugin, const PluginEntry& entry, bool create = true);
  LoadedPlugin* find(const std::string& name) const;
  // Whether `p` drafts for the request (it is the request's draft provider and it speculates).
  bool provides_drafts(const LoadedPlugin& p, const RequestInfo& request) const;
  void fallback(LoadedPlugin& plugin, const char* hook, std::span<const drift_seq_id_t> seqs,
                const std::string& reason);
  // A result the host refused although the hook succeeded (an invalid tree or view, an input field
  // changed): the plugin still holds the request's state, so after the [fallback] it hears that
  // the request goes on without it (on_request_finish, DRIFT_FINISH_ABORT).
  void refuse_output(LoadedPlugin& plugin, const char* hook, drift_seq_id_t seq, const std::string& reason);
  std::vector<drift_page_id_t> disable(LoadedPlugin& plugin, const char* hook, const std::string& reason);
  // Guarded call of one hook for one request; false (and a [fallback] line) when it failed.
  void propose_with(LoadedPlugin& plugin, const StepInfo& step, std::span<const DraftRequest> requests,
                    const std::vector<size_t>& indices, std::vector<DraftTree>& trees);
  bool call_for(LoadedPlugin& plugin, const char* hook, drift_seq_id_t seq,
                const std::function<drift_status_t()>& call);
  // host->release_pages from `plugin`: every page must be one it holds, named once, and the
  // calling hook must not be on_prefix_match or on_evict. Each page goes to
  // callbacks.release_page.
  drift_status_t release_held(LoadedPlugin& plugin, std::span<const drift_page_id_t> pages);
  std::vector<PageChainKey> chain_keys(const FullPages& full);

  std::unique_ptr<HostState> state_;
  std::vector<std::unique_ptr<LoadedPlugin>> plugins_;
  std::unique_ptr<LoadedPlugin> full_policy_;  // the built-in default verification policy
  LoadedPlugin* draft_provider_ = nullptr;
  LoadedPlugin* fallback_provider_ = nullptr;
  LoadedPlugin* verification_ = nullptr;
  const char* read_only_hook_ = nullptr;                // set while a hook that must not release pages runs
  std::map<drift_seq_id_t, PageChainKey> chain_tails_;  // per request: the key of its last offered page
};

}  // namespace drift
