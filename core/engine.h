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
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/config.h"
#include "core/forward_batch.h"
#include "core/kv_cache_manager.h"
#include "core/model_config.h"
#include "core/scheduler.h"
#include "core/sequence.h"
#include "core/tokenizer/tokenizer.h"

namespace drift {

class EnginePlugins;
struct HostCallbacks;

struct RequestOutput {
  int64_t id = 0;
  std::vector<int32_t> new_tokens;   // produced this step
  bool finished = false;
  FinishReason finish_reason = FinishReason::None;
  std::string error;                 // set when finish_reason is Error
};

struct EngineOptions {
  SchedulerLimits limits;
  std::string capacity_policy = "guaranteed_no_evict";
  int64_t num_pages = 0;
  int64_t block_size = 16;
  std::vector<int32_t> eos_ids;
  bool check_kv_integrity = false;   // verify KV invariants after every step ([engine] check_kv_integrity)
};

struct EngineMetrics {
  int64_t steps = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t preemptions = 0;
  int64_t decode_preemptions = 0;  // of requests that had generated tokens already (mid-decode)
  double forward_seconds = 0.0;
};

class Engine {
 public:
  // Builds everything from a config: backend, model weights, KV cache, tokenizer.
  static std::unique_ptr<Engine> from_config(const EngineConfig& config);
  // Around any executor (the real model runner, or a fake in scheduler tests).
  Engine(EngineOptions options, std::unique_ptr<ModelExecutor> executor);
  ~Engine();

  int64_t add_request(std::vector<int32_t> prompt, SamplingParams params);
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
  const EngineOptions& options() const { return options_; }
  ModelExecutor& executor() { return *executor_; }

  // Loads config.plugins and selects [speculative]'s roles; from then on the engine calls their
  // hooks. Without it (no plugins configured) no hook code runs at all. `special`: the tokens
  // the engine stops on, as plugins should see them. `install_services` adds backend services
  // (compute, tensors) to the plugins' host table.
  void enable_plugins(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                      const std::function<void(HostCallbacks&)>& install_services = {});
  EnginePlugins* plugins() { return plugins_.get(); }

  // Set by from_config; null for engines built around a bare executor.
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  const ModelConfig* model_config() const { return model_config_ ? &*model_config_ : nullptr; }

 private:
  std::string validate_request(const Sequence& seq) const;
  void finish(Sequence& seq, FinishReason reason, std::string error = "");
  ForwardBatch build_batch(const SchedulerOutput& scheduled) const;
  static std::vector<Sequence*> decoding_sequences(const SchedulerOutput& scheduled);
  SchedulerOutput schedule_step();
  void process_results(const SchedulerOutput& scheduled, const Tensor& logits);
  bool append_token(Sequence& seq, int32_t token);
  RequestOutput& output_for(Sequence& seq);

  EngineOptions options_;
  std::unique_ptr<Backend> backend_;       // owned when built from a config
  std::unique_ptr<ModelExecutor> executor_;
  std::unique_ptr<KVCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<EnginePlugins> plugins_;  // after kv_: gives cached pages back before kv_ goes
  std::unique_ptr<Tokenizer> tokenizer_;
  std::optional<ModelConfig> model_config_;
  std::map<int64_t, std::unique_ptr<Sequence>> requests_;
  std::map<int64_t, RequestOutput> pending_;  // outputs gathered for the next step() return
  int64_t next_id_ = 0;
  uint64_t seed_counter_ = 0;
  EngineMetrics metrics_;
};

}  // namespace drift
