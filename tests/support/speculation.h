#pragma once
// Helpers for the speculative-decoding tests: running requests to completion, writing the
// reference runs the oracle draft provider replays, and [[plugins]] entries for the oracle and
// ngram providers.
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/engine.h"

namespace drift::test {

struct RunResult {
  std::vector<int32_t> output;
  FinishReason finish_reason = FinishReason::None;
  std::string text;
  std::string error;
  RequestStats stats;
  std::vector<int32_t> streamed;  // new_tokens of every step's RequestOutput, concatenated
  std::string streamed_text;
};

// Greedy decoding of exactly n new tokens (EOS does not stop it): runs of equal length to compare.
SamplingParams greedy_ignoring_eos(int64_t n);

// Adds one request per prompt (params[i], or params[0] for all) at once and steps until all are done.
std::vector<RunResult> run_batch(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                 const std::vector<SamplingParams>& params);
// Each prompt alone: added only when the previous one finished.
std::vector<RunResult> run_one_by_one(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                      const SamplingParams& params);

// Each run's output tokens, in order.
std::vector<std::vector<int32_t>> outputs_of(const std::vector<RunResult>& runs);

// A JSON-lines file of {"prompt_ids", "output_ids"} per run, as `drift generate --json` prints.
std::string write_reference(const std::string& dir, const std::vector<std::vector<int32_t>>& prompts,
                            const std::vector<RunResult>& runs);

struct OracleSettings {
  double corruption = 0.0;
  int64_t branching = 1;
  int64_t depth = 4;
  int64_t seed = 0;
};
// The test-only oracle draft provider (tests/speculation) replaying `reference`.
PluginEntry oracle_entry(const std::string& name, const std::string& reference, const OracleSettings& s);
// The shipped ngram draft provider (plugins/ngram), found by name in the build's plugin folder.
PluginEntry ngram_entry(int64_t max_matches = 1, int64_t min_ngram = 1, int64_t max_ngram = 3);

// The shipped prefix_cache cache manager (plugins/prefix_cache), found by name; `settings` is its
// [plugins.prefix_cache] table as TOML text.
PluginEntry prefix_cache_entry(const std::string& settings = "");

// `config` with speculation on through `provider` (one of config.plugins).
EngineConfig with_speculation(EngineConfig config, const std::string& provider, int64_t max_draft_tokens = 8);
// `config` drafting with oracle trees replaying `reference` (a third of the nodes random tokens,
// two children per node, depth 4), 8 nodes per step: what the shaped and constrained suites verify.
EngineConfig with_corrupted_oracle_trees(EngineConfig config, const std::string& reference);
// `config` drafting with the ngram provider (two matches), 8 tokens per step.
EngineConfig with_ngram_drafts(EngineConfig config);

}  // namespace drift::test
