#pragma once
// drift bench's measurements: one run of a prompt set through an engine under one speculation
// variant, and the table / JSON that put the variants of each config side by side.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/engine.h"

namespace drift::app {

struct VariantResult {
  std::string config;   // the config's label (its file)
  std::string variant;  // "off" or a draft provider
  int64_t prompts = 0;  // requests run: the prompts times their samples
  int64_t samples = 1;  // parallel samples per prompt (--n)
  int64_t failed = 0;  // requests the engine refused (e.g. a prompt longer than max_seq_len)
  int64_t output_tokens = 0;
  double seconds = 0.0;
  double mean_ttft_ms = 0.0;
  double mean_tpot_ms = 0.0;                          // time per output token after the first, averaged over requests
  int64_t steps = 0;                                  // engine steps
  double forward_seconds = 0.0;                       // in the target model's forwards
  DraftTiming draft;                                  // in the draft providers' hooks (host-measured)
  int64_t decode_only_steps = 0;                      // steps without a prefill chunk
  std::map<std::string, int64_t> drafts_by_provider;  // verified trees per provider (hybrid drafting)
  nlohmann::json plugin_stats = nlohmann::json::object();  // the plugins' own figures at the end of the run
  nlohmann::json plugin_memory = nlohmann::json::object();  // declared and held device memory (host-measured)
  double decode_only_forward_seconds = 0.0;
  int64_t prefill_tokens = 0;       // prompt tokens the model computed (cache hits are not)
  PrefixCacheMetrics prefix_cache;  // this variant's share (pages_held: at its end)
  SpeculationStats speculation;
  VerificationMetrics verification;  // full vs partial KV views (SpecPV) and their verify forwards
  std::map<int32_t, int64_t> acceptance_histogram;
  // Adaptive speculation: draft budget chosen -> how often (0: a request kept from drafting).
  std::map<int32_t, int64_t> draft_budgets;
  int64_t retired_requests = 0;  // requests adaptive speculation stopped drafting for
  // Structured output: logit rows masked, and the host time spent on their masks.
  int64_t masked_rows = 0;
  double mask_seconds = 0.0;
  double mean_draft_budget() const {
    int64_t n = 0, sum = 0;
    for (const auto& [b, count] : draft_budgets) {
      n += count;
      sum += b * count;
    }
    return n > 0 ? static_cast<double>(sum) / static_cast<double>(n) : 0.0;
  }
  // Against the first config's "off" outputs, prompt by prompt (-1: this is that run): a lossless
  // change (speculation, prefix cache) gives identical outputs.
  int64_t outputs_equal_to_first = -1;
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(output_tokens) / seconds : 0.0; }
  // Per decode-only step (no prefill chunk in it): the target forward's time and the drafting time.
  double forward_ms_per_step() const {
    return decode_only_steps > 0 ? 1e3 * decode_only_forward_seconds / static_cast<double>(decode_only_steps) : 0.0;
  }
  double draft_ms_per_step() const {
    return decode_only_steps > 0 ? 1e3 * draft.decode_seconds / static_cast<double>(decode_only_steps) : 0.0;
  }
};

// Runs every prompt as `samples` parallel samples (at most `concurrency` requests in flight) to
// completion under `params`; `outputs` receives each prompt's first sample's output tokens. A
// request the engine refuses is counted as failed and left out of the figures (stderr says why).
// Progress goes to stderr.
VariantResult run_variant(Engine& engine, const std::string& config, const std::string& variant,
                          const std::vector<std::vector<int32_t>>& prompts, int64_t samples,
                          const SamplingParams& params, int64_t concurrency,
                          std::vector<std::vector<int32_t>>& outputs);

// MT-Bench as it ships with drift (datasets/mt_bench.jsonl; apps/shipped_data.h finds it).
std::string default_prompt_set();

class BenchReport {
 public:
  void add(VariantResult result) { results_.push_back(std::move(result)); }
  std::string table() const;    // fixed-width, one row per (config, variant)
  nlohmann::json json() const;  // {"results": [...]} with the same figures and the histograms
 private:
  double speedup(const VariantResult& r) const;         // tokens/s over the same config's "off" run (0 if none)
  double decode_speedup(const VariantResult& r) const;  // its time per output token over this one's
  std::vector<VariantResult> results_;
};

}  // namespace drift::app
