#pragma once
// Engine: the continuous-batching loop. add_request() queues a prompt; each step() schedules a
// ragged batch (decode tokens + prefill chunks), runs one forward, samples, and returns what each
// request produced. A bad request (invalid ids, too long, bad sampling values, can never fit)
// finishes alone with finish_reason "error"; the others proceed.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cache_metrics.h"
#include "core/config.h"
#include "core/draft_timing.h"
#include "core/forward_batch.h"
#include "core/kv_cache_manager.h"
#include "core/model/model_config.h"
#include "core/plugin/plugin_types.h"
#include "core/scheduler.h"
#include "core/sequence.h"
#include "core/speculation/acceptance.h"
#include "core/speculation/kv_view_batch.h"
#include "core/speculation/speculation_options.h"
#include "core/speculation/speculator.h"
#include "core/speculation/verification_metrics.h"
#include "core/tokenizer/output_text.h"
#include "core/tokenizer/tokenizer.h"

namespace drift {
namespace grammar {
class ConstraintRegistry;
}

class EnginePlugins;
class PluginHost;
struct HostCallbacks;

struct RequestOutput {
  int64_t id = 0;
  std::vector<int32_t> new_tokens;  // committed this step (several when a draft was accepted)
  std::string text;                 // text emitted this step (engines with a tokenizer; never
                                    // any part of a stop string)
  bool finished = false;
  FinishReason finish_reason = FinishReason::None;
  std::string error;                    // set when finish_reason is Error
  std::vector<TokenLogprobs> logprobs;  // one per new token when the request asked (SamplingParams::logprobs)
};

struct EngineOptions {
  SchedulerLimits limits;
  std::string capacity_policy = "guaranteed_no_evict";
  int64_t num_pages = 0;
  int64_t block_size = 16;
  // The sliding-window layers' page group (core/kv_window_pages.h): its pages and the layers'
  // window; 0 pages: no group, every layer keeps its KV in the `num_pages` pool.
  int64_t window_pages = 0;
  int64_t window = 0;
  std::vector<int32_t> eos_ids;
  bool check_kv_integrity = false;  // verify KV invariants after every step ([engine] check_kv_integrity)
  // Threads computing structured-output masks ahead ([engine] grammar_threads); -1: by the
  // machine's cores (grammar::default_mask_workers; from_config makes it 0 for the CPU backend).
  int grammar_threads = -1;
  // A new grammar's likeliest states whose masks the workers compute before requests ask for them
  // ([engine] grammar_explored_masks); -1: ConstraintRegistry::kExploredMasks, 0: none.
  int grammar_explored_masks = -1;
  SpeculationOptions speculation;
};

struct EngineMetrics {
  int64_t steps = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t preemptions = 0;
  int64_t decode_preemptions = 0;  // of requests that had generated tokens already (mid-decode)
  double forward_seconds = 0.0;
  // Steps that only decoded (every chunk a decode token or a verify tree), and their forwards' time.
  int64_t decode_only_steps = 0;
  double decode_only_forward_seconds = 0.0;
  SpeculationStats speculation;                       // summed over requests (no per-step list)
  std::map<int32_t, int64_t> acceptance_histogram;    // tokens committed per decode step -> steps
  std::map<int32_t, int64_t> draft_budgets;           // adaptive speculation: budget chosen -> times
  int64_t retired_requests = 0;                       // requests adaptive speculation stopped drafting for
  PrefixCacheMetrics prefix_cache;                    // zeros without a cache-manager plugin
  DraftTiming draft_timing;                           // zeros without a draft-provider plugin
  std::map<std::string, int64_t> drafts_by_provider;  // verified trees per provider
  VerificationMetrics verification;                   // full vs partial KV views and their forwards
  // Structured output: logit rows given a grammar mask, and the host time spent making those
  // masks (grammar states advanced, masks computed or found in the cache).
  int64_t masked_rows = 0;
  double mask_seconds = 0.0;
};

class Engine {
 public:
  // Builds everything from a config: backend, model weights, KV cache, tokenizer.
  static std::unique_ptr<Engine> from_config(const EngineConfig& config);
  // Around any executor (the real model runner, or a fake in scheduler tests).
  Engine(EngineOptions options, std::unique_ptr<ModelExecutor> executor);
  ~Engine();

  int64_t add_request(std::vector<int32_t> prompt, SamplingParams params);
  // Parallel samples (OpenAI's n): n requests on one prompt, sharing its KV pages
  // (core/parallel_samples.h). Sample i of a seeded request uses seed + i; unseeded ones get
  // seeds of their own. Returns their ids in sample order. DriftError unless
  // 1 <= n <= kMaxParallelSamples.
  std::vector<int64_t> add_samples(const std::vector<int32_t>& prompt, const SamplingParams& params, int64_t n);
  std::vector<RequestOutput> step();
  void abort(int64_t id);
  bool has_unfinished() const;

  // Teacher-forced next-token logits for every position of `ids`: host fp32 [len, vocab]
  // (like vLLM's prompt_logprobs). Runs in chunks of the step token budget, using KV pages of
  // its own that are released afterwards; the pages must be free (run it while idle).
  Tensor score(const std::vector<int32_t>& ids);

  const Sequence& request(int64_t id) const;
  void release(int64_t id);  // forget a finished request
  const KVCacheManager& kv() const { return *kv_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  const EngineMetrics& metrics() const { return metrics_; }
  // Makes every cache manager give back every page it holds (vLLM's reset_prefix_cache), e.g. so
  // that each benchmark variant starts cold. Only while idle: DriftError when requests are
  // unfinished. Returns the pages given back.
  int64_t reset_prefix_cache();
  const EngineOptions& options() const { return options_; }
  ModelExecutor& executor() { return *executor_; }
  // Why the engine can run no more steps ("" while it can): a tensor-parallel rank failed, and
  // every later step throws. A server stops on it.
  std::string broken() const { return executor_->broken(); }

  // Loads config.plugins and selects [speculative]'s roles; from then on the engine calls their
  // hooks. Without it (no plugins configured) no hook code runs at all. `special`: the tokens
  // the engine stops on, as plugins should see them. `install_services` adds backend services
  // (compute, tensors) to the plugins' host table. `preloaded`: the plugins as preload_plugins
  // loaded them to ask their memory before the KV pool was sized (null: loaded here).
  void enable_plugins(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                      const std::function<void(HostCallbacks&)>& install_services = {});
  void enable_plugins(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                      const std::function<void(HostCallbacks&)>& install_services,
                      std::unique_ptr<PluginHost> preloaded);
  EnginePlugins* plugins() { return plugins_.get(); }
  // The plugins' own figures (DRIFT_STATS_EXTENSION) by plugin entry name, as JSON text.
  std::map<std::string, std::string> plugin_stats() const;
  // The configured plugins as the host sees them (enabled, memory declared and held), config order.
  std::vector<PluginInfo> plugin_infos() const;
  // Replaces the acceptance rule (SpeculationOptions::acceptance): for tests that prove the
  // losslessness tests catch broken rules.
  void set_acceptance_rule(AcceptanceRule rule) {
    options_.speculation.acceptance = rule;
    options_.speculation.custom_acceptance = true;
    speculator_->set_acceptance_rule(std::move(rule));
  }

  // Set by from_config; null for engines built around a bare executor.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const ModelConfig* model_config() const { return model_config_ ? &*model_config_ : nullptr; }

 private:
  int64_t add_sequence(std::vector<int32_t> prompt, SamplingParams params, int64_t sample_group);
  std::string validate_request(const Sequence& seq) const;
  void finish(Sequence& seq, FinishReason reason, std::string error = "");
  SchedulerOutput schedule_step();
  void note_schedule(const SchedulerOutput& scheduled);
  // What the target forward returned: each logit row's pick, or (for a custom acceptance rule)
  // the host logits.
  struct TargetOutput {
    std::vector<int32_t> picks;
    Tensor logits;
    std::vector<TokenLogprobs> logprobs;  // per logit row, when a request asked for them
    Tensor raw_logits;                    // `logits` before shaping, when a row shaped them (logprobs read these)
  };
  std::vector<RowSampling> logit_rows(const SchedulerOutput& scheduled) const;
  // Structured output's masks on logit_rows' rows (host work, overlapped with a device forward).
  void add_masks(const SchedulerOutput& scheduled, std::vector<RowSampling>& rows);
  // Gives a request with a structured output its grammar constraint; "" or why it cannot.
  std::string attach_grammar(Sequence& seq);
  // The structured-output registry: its vocabulary trie starts building in the background, its
  // mask workers start (EngineOptions::grammar_threads).
  std::unique_ptr<grammar::ConstraintRegistry> make_grammars() const;
  // One step's work on a non-empty schedule: views, forward, accept and commit, next drafts.
  void run_step(const SchedulerOutput& scheduled);
  // `views`: the verification policy's, one per chunk (empty: every chunk attends fully).
  TargetOutput run_target(const SchedulerOutput& scheduled, std::span<const KvView> views);
  void process_results(const SchedulerOutput& scheduled, const TargetOutput& output);
  std::vector<TokenLogprobs> path_logprobs(const Sequence& seq, const AcceptedPath& path, const TargetOutput& output,
                                           int64_t first_row) const;
  // The update step (engine_commit.cpp): commits what a chunk's forward produced; returns the
  // draft nodes whose tokens (and KV) were kept.
  // `logprobs`: one per path token, or empty when the request did not ask.
  std::vector<int32_t> commit(Sequence& seq, const ScheduledChunk& chunk, const AcceptedPath& path,
                              std::span<const TokenLogprobs> logprobs = {});
  FinishReason append_output(Sequence& seq, int32_t token, const TokenLogprobs* logprobs);
  RequestOutput& output_for(Sequence& seq);

  EngineOptions options_;
  std::unique_ptr<Backend> backend_;  // owned when built from a config
  std::unique_ptr<ModelExecutor> executor_;
  std::unique_ptr<KVCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<EnginePlugins> plugins_;  // after kv_: gives cached pages back before kv_ goes
  std::unique_ptr<Tokenizer> tokenizer_;
  std::optional<ModelConfig> model_config_;
  std::map<int64_t, std::unique_ptr<Sequence>> requests_;
  std::map<int64_t, RequestOutput> pending_;  // outputs gathered for the next step() return
  std::map<int64_t, OutputText> texts_;       // per request with a tokenizer: its text and stop strings
  int64_t next_id_ = 0;
  uint64_t seed_counter_ = 0;
  EngineMetrics metrics_;
  std::unique_ptr<Speculator> speculator_;  // drafting and verification: the one owner
  // Made with the tokenizer (from_config), else on the first structured output; after tokenizer_,
  // which its vocabulary build reads.
  std::unique_ptr<grammar::ConstraintRegistry> grammars_;
};

}  // namespace drift
