#include "apps/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>

#include <fmt/format.h>

#include "apps/plugin_stats_json.h"
#include "apps/shipped_data.h"
#include "apps/verification_json.h"
#include "core/error.h"

namespace drift::app {

std::string default_prompt_set() { return shipped_data_file("datasets/mt_bench.jsonl"); }

namespace {

void add_request_stats(VariantResult& r, const Sequence& seq) {
  r.output_tokens += seq.stats.output_tokens;
  r.mean_ttft_ms += seq.stats.ttft_ms;
  if (seq.stats.output_tokens > 1)
    r.mean_tpot_ms += (seq.stats.latency_ms - seq.stats.ttft_ms) / static_cast<double>(seq.stats.output_tokens - 1);
}

}  // namespace

// What a counter map gained between two snapshots of the engine's metrics (keys that grew).
template <typename Key>
std::map<Key, int64_t> increase(const std::map<Key, int64_t>& before, const std::map<Key, int64_t>& after) {
  std::map<Key, int64_t> delta;
  for (const auto& [key, n] : after) {
    const auto it = before.find(key);
    const int64_t grew = n - (it == before.end() ? 0 : it->second);
    if (grew > 0) delta[key] = grew;
  }
  return delta;
}

VariantResult run_variant(Engine& engine, const std::string& config, const std::string& variant,
                          const std::vector<std::vector<int32_t>>& prompts, int64_t samples,
                          const SamplingParams& params, int64_t concurrency,
                          std::vector<std::vector<int32_t>>& outputs) {
  VariantResult r;
  r.config = config;
  r.variant = variant;
  r.samples = samples;
  r.prompts = static_cast<int64_t>(prompts.size()) * samples;
  const EngineMetrics before = engine.metrics();
  outputs.assign(prompts.size(), {});
  std::deque<size_t> queue;
  for (size_t i = 0; i < prompts.size(); ++i) queue.push_back(i);
  struct InFlight {
    size_t prompt = 0;
    int64_t sample = 0;
  };
  std::map<int64_t, InFlight> in_flight;
  int64_t done = 0;
  const auto start = Clock::now();
  while (!queue.empty() || !in_flight.empty()) {
    // A prompt's samples go in together (they share its KV), the first even past the concurrency.
    while (!queue.empty() && (in_flight.empty() || static_cast<int64_t>(in_flight.size()) + samples <= concurrency)) {
      const std::vector<int64_t> ids = engine.add_samples(prompts[queue.front()], params, samples);
      for (size_t k = 0; k < ids.size(); ++k) in_flight[ids[k]] = {queue.front(), static_cast<int64_t>(k)};
      queue.pop_front();
    }
    for (const RequestOutput& out : engine.step()) {
      if (!out.finished) continue;
      const Sequence& seq = engine.request(out.id);
      const InFlight request = in_flight[out.id];
      if (seq.finish_reason == FinishReason::Error) {
        std::fprintf(stderr, "[bench] %s / %s: prompt %zu left out: %s\n", config.c_str(), variant.c_str(),
                     request.prompt, seq.error.c_str());
        r.failed++;
      } else {
        add_request_stats(r, seq);
      }
      if (request.sample == 0) outputs[request.prompt] = seq.output;
      in_flight.erase(out.id);
      engine.release(out.id);
      if (++done % 10 == 0 || done == r.prompts)
        std::fprintf(stderr, "[bench] %s / %s: %ld/%ld requests\n", config.c_str(), variant.c_str(),
                     static_cast<long>(done), static_cast<long>(r.prompts));
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto completed = static_cast<double>(std::max<int64_t>(1, r.prompts - r.failed));
  r.mean_ttft_ms /= completed;
  r.mean_tpot_ms /= completed;
  const EngineMetrics& after = engine.metrics();
  r.steps = after.steps - before.steps;
  r.forward_seconds = after.forward_seconds - before.forward_seconds;
  r.draft.propose_calls = after.draft_timing.propose_calls - before.draft_timing.propose_calls;
  r.draft.propose_seconds = after.draft_timing.propose_seconds - before.draft_timing.propose_seconds;
  r.draft.forward_hook_seconds = after.draft_timing.forward_hook_seconds - before.draft_timing.forward_hook_seconds;
  r.draft.decode_seconds = after.draft_timing.decode_seconds - before.draft_timing.decode_seconds;
  r.decode_only_steps = after.decode_only_steps - before.decode_only_steps;
  r.decode_only_forward_seconds = after.decode_only_forward_seconds - before.decode_only_forward_seconds;
  r.drafts_by_provider = increase(before.drafts_by_provider, after.drafts_by_provider);
  r.plugin_stats = plugin_stats_json(engine);
  r.plugin_memory = plugin_memory_json(engine);
  r.prefill_tokens = after.prefill_tokens - before.prefill_tokens;
  const PrefixCacheMetrics &cb = before.prefix_cache, &ca = after.prefix_cache;
  r.prefix_cache = {ca.queries - cb.queries,
                    ca.hits - cb.hits,
                    ca.query_tokens - cb.query_tokens,
                    ca.hit_tokens - cb.hit_tokens,
                    ca.evicted_pages - cb.evicted_pages,
                    ca.pages_held};
  const SpeculationStats &b = before.speculation, &e = after.speculation;
  r.speculation.draft_tokens = e.draft_tokens - b.draft_tokens;
  r.speculation.accepted_tokens = e.accepted_tokens - b.accepted_tokens;
  r.speculation.rewound_tokens = e.rewound_tokens - b.rewound_tokens;
  r.speculation.verify_steps = e.verify_steps - b.verify_steps;
  r.speculation.decode_steps = e.decode_steps - b.decode_steps;
  r.speculation.decode_tokens = e.decode_tokens - b.decode_tokens;
  r.speculation.nodes_with_prob = e.nodes_with_prob - b.nodes_with_prob;
  r.speculation.accepted_with_prob = e.accepted_with_prob - b.accepted_with_prob;
  r.speculation.draft_prob_sum = e.draft_prob_sum - b.draft_prob_sum;
  r.speculation.accepted_draft_prob_sum = e.accepted_draft_prob_sum - b.accepted_draft_prob_sum;
  r.verification = after.verification - before.verification;
  r.acceptance_histogram = increase(before.acceptance_histogram, after.acceptance_histogram);
  r.draft_budgets = increase(before.draft_budgets, after.draft_budgets);
  r.retired_requests = after.retired_requests - before.retired_requests;
  r.masked_rows = after.masked_rows - before.masked_rows;
  r.mask_seconds = after.mask_seconds - before.mask_seconds;
  return r;
}

double BenchReport::speedup(const VariantResult& r) const {
  for (const VariantResult& base : results_)
    if (base.config == r.config && base.variant == "off" && base.tokens_per_second() > 0)
      return r.tokens_per_second() / base.tokens_per_second();
  return 0.0;
}

// Decoding alone (time per output token after the first), which a long prompt's prefill does not
// dilute: what speculation changes.
double BenchReport::decode_speedup(const VariantResult& r) const {
  for (const VariantResult& base : results_)
    if (base.config == r.config && base.variant == "off" && r.mean_tpot_ms > 0)
      return base.mean_tpot_ms / r.mean_tpot_ms;
  return 0.0;
}

// Columns as wide as the longest config (up to 48, then its tail) and variant ("a+b": a hybrid).
std::string BenchReport::table() const {
  size_t config_width = 6, variant_width = 7;
  for (const VariantResult& r : results_) {
    config_width = std::max(config_width, std::min<size_t>(r.config.size(), 48));
    variant_width = std::max(variant_width, r.variant.size());
  }
  std::string out = fmt::format(
      "{:<{}} {:<{}} {:>7} {:>8} {:>10} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8} {:>8} {:>7} {:>8} {:>8} {:>7}\n", "config",
      config_width, "variant", variant_width, "prompts", "tokens", "tokens/s", "TPOT ms", "TTFT ms", "accept",
      "drafted", "accepted", "speedup", "decode", "cache%", "fwd ms", "draft ms", "budget");
  for (const VariantResult& r : results_) {
    const std::string label =
        r.config.size() > config_width ? "..." + r.config.substr(r.config.size() - (config_width - 3)) : r.config;
    const std::string cache =
        r.prefix_cache.queries > 0 ? fmt::format("{:.1f}", 100.0 * r.prefix_cache.hit_rate()) : std::string("-");
    const std::string budget =
        r.draft_budgets.empty() ? std::string("-") : fmt::format("{:.2f}", r.mean_draft_budget());
    out += fmt::format(
        "{:<{}} {:<{}} {:>7} {:>8} {:>10.1f} {:>9.3f} {:>9.2f} {:>8.3f} {:>9} {:>9} {:>7.2f}x {:>7.2f}x {:>7} {:>8.3f} "
        "{:>8.3f} {:>7}\n",
        label, config_width, r.variant, variant_width, r.prompts - r.failed, r.output_tokens, r.tokens_per_second(),
        r.mean_tpot_ms, r.mean_ttft_ms, r.speculation.acceptance_length(), r.speculation.draft_tokens,
        r.speculation.accepted_tokens, speedup(r), decode_speedup(r), cache, r.forward_ms_per_step(),
        r.draft_ms_per_step(), budget);
  }
  // Structured output: the host time its masks took per step.
  for (const VariantResult& r : results_) {
    if (r.masked_rows == 0) continue;
    out += fmt::format("structured output {} / {}: {} masked rows, masks {:.3f} ms per step ({:.2f}% of the run)\n",
                       r.config, r.variant, r.masked_rows,
                       r.steps > 0 ? 1e3 * r.mask_seconds / static_cast<double>(r.steps) : 0.0,
                       r.seconds > 0 ? 100.0 * r.mask_seconds / r.seconds : 0.0);
  }
  // Partial verification (SpecPV): its verify forwards against the full ones of the same run.
  for (const VariantResult& r : results_) {
    const VerificationMetrics& v = r.verification;
    if (v.partial_views == 0) continue;
    out += fmt::format(
        "verify {} / {}: {} full steps x {:.3f} ms, {} partial steps x {:.3f} ms ({:.2f}x), partial views read {:.1f}% "
        "of their context's pages\n",
        r.config, r.variant, v.full_verify_steps, v.full_step_ms(), v.partial_verify_steps, v.partial_step_ms(),
        v.full_step_ms() > 0 ? v.partial_step_ms() / v.full_step_ms() : 0.0, 100.0 * v.attended_fraction());
  }
  return out;
}

nlohmann::json BenchReport::json() const {
  nlohmann::json results = nlohmann::json::array();
  for (const VariantResult& r : results_) {
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [len, n] : r.acceptance_histogram) histogram[std::to_string(len)] = n;
    nlohmann::json budgets = nlohmann::json::object();
    for (const auto& [b, n] : r.draft_budgets) budgets[std::to_string(b)] = n;
    results.push_back({{"config", r.config},
                       {"variant", r.variant},
                       {"prompts", r.prompts},
                       {"samples", r.samples},
                       {"failed", r.failed},
                       {"output_tokens", r.output_tokens},
                       {"seconds", r.seconds},
                       {"output_tokens_per_second", r.tokens_per_second()},
                       {"mean_time_per_output_token_ms", r.mean_tpot_ms},
                       {"mean_ttft_ms", r.mean_ttft_ms},
                       {"engine_steps", r.steps},
                       {"acceptance_length", r.speculation.acceptance_length()},
                       {"acceptance_histogram", histogram},
                       {"draft_budgets", budgets},
                       {"mean_draft_budget", r.mean_draft_budget()},
                       {"retired_requests", r.retired_requests},
                       {"masked_rows", r.masked_rows},
                       {"mask_seconds", r.mask_seconds},
                       {"mask_ms_per_step", r.steps > 0 ? 1e3 * r.mask_seconds / static_cast<double>(r.steps) : 0.0},
                       {"draft_tokens", r.speculation.draft_tokens},
                       {"accepted_tokens", r.speculation.accepted_tokens},
                       {"rewound_tokens", r.speculation.rewound_tokens},
                       {"verify_steps", r.speculation.verify_steps},
                       {"mean_draft_prob", r.speculation.mean_draft_prob()},
                       {"mean_accepted_draft_prob", r.speculation.mean_accepted_draft_prob()},
                       {"speedup_vs_off", speedup(r)},
                       {"decode_speedup_vs_off", decode_speedup(r)},
                       {"decode_only_steps", r.decode_only_steps},
                       {"target_forward_ms_per_decode_step", r.forward_ms_per_step()},
                       {"draft_ms_per_decode_step", r.draft_ms_per_step()},
                       {"draft",
                        {{"propose_calls", r.draft.propose_calls},
                         {"propose_seconds", r.draft.propose_seconds},
                         {"forward_hook_seconds", r.draft.forward_hook_seconds},
                         {"decode_step_seconds", r.draft.decode_seconds}}},
                       {"verification", verification_json(r.verification)},
                       {"drafts_by_provider", r.drafts_by_provider},
                       {"plugin_stats", r.plugin_stats},
                       {"plugin_memory", r.plugin_memory},
                       {"prefill_tokens", r.prefill_tokens},
                       {"outputs_equal_to_first_off", r.outputs_equal_to_first},
                       {"prefix_cache",
                        {{"queries", r.prefix_cache.queries},
                         {"hits", r.prefix_cache.hits},
                         {"query_tokens", r.prefix_cache.query_tokens},
                         {"hit_tokens", r.prefix_cache.hit_tokens},
                         {"prefill_tokens_avoided", r.prefix_cache.hit_tokens},
                         {"hit_rate", r.prefix_cache.hit_rate()},
                         {"evicted_pages", r.prefix_cache.evicted_pages},
                         {"pages_held", r.prefix_cache.pages_held}}}});
  }
  return {{"results", results}};
}

}  // namespace drift::app
