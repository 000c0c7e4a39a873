#pragma once
// EnginePlugins: the bridge between the engine loop and PluginHost. It turns engine events
// (admission, preemption, the forward, committed tokens, pages that became full, finished
// requests, a shortage of pages) into plugin hooks at the points of DESIGN.md's data flow,
// applies what cache managers answer to the KV cache (adopt / retain / release pages), and
// serves the engine-state services (EngineStateServices). Drafting and the verification
// policy's views are the Speculator's (core/speculation/speculator.h), through host().
// An engine without [[plugins]] and without speculation has no EnginePlugins at all, so its
// behaviour is exactly the plugin-free engine's.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/cache_metrics.h"
#include "core/config.h"
#include "core/draft_timing.h"
#include "core/forward_batch.h"
#include "core/kv_cache_manager.h"
#include "core/model/model_config.h"
#include "core/plugin/engine_state_services.h"
#include "core/plugin/plugin_host.h"
#include "core/scheduler.h"
#include "core/sequence.h"
#include "core/tokenizer/tokenizer.h"

namespace drift {

// The engine parts the bridge works on; all owned by the engine and outliving the bridge.
struct EngineParts {
  KVCacheManager& kv;
  const Scheduler& scheduler;
  ModelExecutor& executor;
  std::function<const Sequence*(int64_t id)> lookup;
  SpecialTokens special;                // what the engine stops on; plugins see the same in model_info
  Device device = Device::CPU;          // where the backend keeps activations and KV
  DType activation_dtype = DType::F32;  // and in which dtype
  void* stream = nullptr;               // the backend's stream, handed to hooks (nullptr on the CPU)
  PrefixCacheMetrics& cache_metrics;    // the engine's, kept up to date here
  DraftTiming& draft_timing;            // likewise
};

// drift_model_info_t for the engine's plugins: the model, the special tokens, the KV pool
// (num_pages 0 before it is sized), the device and dtype, and the step limits.
drift_model_info_t engine_model_info(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                                     int64_t block_size, int64_t num_pages, Device device, DType activation_dtype);

// Before the engine sizes its KV pool: loads the configured plugins (no instance yet) and asks
// what they will hold in device memory (ABI 1.4 declare_memory). A non-optional plugin that
// cannot load stops the engine, as in EnginePlugins.
std::unique_ptr<PluginHost> preload_plugins(const EngineConfig& config, const drift_model_info_t& info,
                                            PluginMemory& memory);

class EnginePlugins final : public SchedulerObserver {
 public:
  // Adds the backend's services (compute primitives, tensors, checkpoints) to the callbacks once
  // the engine-state ones are in place -- before any plugin is created, since create() may
  // already load weights.
  using ServiceInstaller = std::function<void(HostCallbacks&)>;

  // `preloaded`: the plugins already loaded and asked for their memory (preload_plugins); null:
  // loaded and asked here. Either way they are created here.
  EnginePlugins(const EngineConfig& config, const ModelConfig& model, EngineParts parts,
                const ServiceInstaller& install_services, std::unique_ptr<PluginHost> preloaded = nullptr);
  ~EnginePlugins() override;  // hands every page cache managers still hold back to the KV cache

  PluginHost& host() { return host_; }
  const PluginHost& host() const { return host_; }
  void* stream() const { return stream_; }  // the backend stream hooks receive (StepInfo::stream)

  // Runs on every request admitted, before its plugins hear of it (on_request_start): the
  // speculator decides there whether the request starts with its draft provider.
  void set_admission_check(std::function<void(Sequence&)> check) { admission_check_ = std::move(check); }

  // SchedulerObserver: admission, preemption and page shortage.
  int64_t match_prefix(Sequence& seq) override;
  void admitted(Sequence& seq) override;
  void preempted(Sequence& seq) override;
  int64_t reclaim(int64_t wanted) override;
  // Nothing runs and the next request does not fit: cache managers MUST give `wanted` pages
  // back (one that will not is disabled and loses all it holds). Returns the pages freed.
  int64_t reclaim_to_unblock(int64_t wanted);
  // Every page cache managers hold, given back (Engine::reset_prefix_cache; idle engine only).
  int64_t release_all_cached();

  // Start of an engine step: views handed to plugins during the last one expire.
  void begin_step() { state_.begin_step(); }
  // The forward about to run keeps these sequences' verify-row queries (host->query_states).
  void queries_kept(std::map<int64_t, QueryRows> rows) { state_.record_query_rows(std::move(rows)); }
  // The forward of `scheduled` ran: its captured hidden states are what plugins read now.
  void after_forward(const SchedulerOutput& scheduled) { state_.record_forward(scheduled); }
  // The step's commits are done; `accepted[i]` holds the accepted nodes of chunk i (empty for a
  // chunk without a draft). A verified sequence's hidden-state rows become its root's and its
  // accepted nodes', in position order -- what on_target_forward and on_propose read, as for a
  // plain decode step. Then on_target_forward for the sequences still running.
  void after_commit(int64_t step, const SchedulerOutput& scheduled, const std::vector<std::vector<int32_t>>& accepted);
  // A forward outside the step loop (scoring) overwrote the captures.
  void forget_forward() { state_.forget_forward(); }
  // Tokens committed to `seq` this step: on_accept, then on_rewind when `rewound` draft
  // positions were discarded.
  void committed(const Sequence& seq, const std::vector<int32_t>& tokens, int64_t rewound);
  // Offers pages that became full of committed tokens to cache managers.
  void offer_full_pages(const Sequence& seq);
  void finished(const Sequence& seq);

 private:
  RequestInfo request_info(const Sequence& seq);
  void keep_committed_rows(const SchedulerOutput& scheduled, const std::vector<std::vector<int32_t>>& accepted);
  void release(const std::vector<drift_page_id_t>& pages);
  // Pages cache managers gave back while the engine runs: released and counted as evictions.
  int64_t evicted(const std::vector<drift_page_id_t>& pages);
  bool caches(const Sequence& seq) const;  // a cache manager is loaded and seq did not opt out

  KVCacheManager& kv_;
  ModelExecutor& executor_;
  std::function<void(Sequence&)> admission_check_;
  void* stream_ = nullptr;     // the backend stream hooks receive (StepInfo::stream)
  EngineStateServices state_;  // before host_: plugins' destroy may still call services
  std::unique_ptr<PluginHost> owned_host_;
  PluginHost& host_;
  std::vector<drift_token_t> request_tokens_;  // the token view of the RequestInfo being passed
  std::set<int64_t> started_;                  // requests that got on_request_start
  std::map<int64_t, int64_t> offered_blocks_;  // per request: leading blocks already offered
  std::map<int64_t, bool> resumed_;            // preempted requests, re-admitted as "resumed"
  PrefixCacheMetrics& cache_metrics_;
  DraftTiming& draft_timing_;
};

}  // namespace drift
