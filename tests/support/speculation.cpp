#include "support/speculation.h"

#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_data.h"

namespace drift::test {
namespace {

void collect(Engine& engine, std::map<int64_t, RunResult>& results) {
  for (const RequestOutput& out : engine.step()) {
    RunResult& r = results[out.id];
    r.streamed.insert(r.streamed.end(), out.new_tokens.begin(), out.new_tokens.end());
    r.streamed_text += out.text;
  }
}

RunResult finished(const Engine& engine, int64_t id, RunResult r) {
  const Sequence& seq = engine.request(id);
  r.output = seq.output;
  r.finish_reason = seq.finish_reason;
  r.text = seq.text;
  r.error = seq.error;
  r.stats = seq.stats;
  return r;
}

}  // namespace

SamplingParams greedy_ignoring_eos(int64_t n) {
  SamplingParams p;
  p.max_new_tokens = n;
  p.ignore_eos = true;
  return p;
}

std::vector<RunResult> run_batch(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                 const std::vector<SamplingParams>& params) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < prompts.size(); ++i)
    ids.push_back(engine.add_request(prompts[i], params[params.size() == 1 ? 0 : i]));
  std::map<int64_t, RunResult> results;
  while (engine.has_unfinished()) collect(engine, results);
  std::vector<RunResult> out;
  for (int64_t id : ids) out.push_back(finished(engine, id, results[id]));
  return out;
}

std::vector<RunResult> run_one_by_one(Engine& engine, const std::vector<std::vector<int32_t>>& prompts,
                                      const SamplingParams& params) {
  std::vector<RunResult> out;
  for (const auto& prompt : prompts) out.push_back(run_batch(engine, {prompt}, {params})[0]);
  return out;
}

std::string write_reference(const std::string& dir, const std::vector<std::vector<int32_t>>& prompts,
                            const std::vector<RunResult>& runs) {
  const std::string path = dir + "/reference.jsonl";
  std::ofstream file(path);
  for (size_t i = 0; i < prompts.size(); ++i)
    file << nlohmann::json{{"prompt_ids", prompts[i]}, {"output_ids", runs[i].output}}.dump() << "\n";
  EXPECT_TRUE(file.good()) << path;
  return path;
}

PluginEntry oracle_entry(const std::string& name, const std::string& reference, const OracleSettings& s) {
  PluginEntry e;
  e.name = name;
  e.path = oracle_plugin();
  e.settings_toml = fmt::format("reference = {}\ncorruption = {:.6f}\nbranching = {}\ndepth = {}\nseed = {}\n",
                                nlohmann::json(reference).dump(), s.corruption, s.branching, s.depth, s.seed);
  return e;
}

PluginEntry ngram_entry(int64_t max_matches, int64_t min_ngram, int64_t max_ngram) {
  PluginEntry e;
  e.name = "ngram";
  e.settings_toml =
      fmt::format("max_matches = {}\nmin_ngram = {}\nmax_ngram = {}\n", max_matches, min_ngram, max_ngram);
  return e;
}

PluginEntry prefix_cache_entry(const std::string& settings) {
  PluginEntry e;
  e.name = "prefix_cache";
  e.settings_toml = settings;
  return e;
}

EngineConfig with_speculation(EngineConfig config, const std::string& provider, int64_t max_draft_tokens) {
  config.speculative.enabled = true;
  config.speculative.draft_provider = provider;
  config.speculative.max_draft_tokens = max_draft_tokens;
  // Fixed budgets: the tests check what a provider's drafts do, and adaptive speculation on the
  // CPU would mostly decline to draft (tests/core/adaptive_speculation_test.cc covers it).
  config.speculative.adaptive = false;
  return config;
}

EngineConfig with_corrupted_oracle_trees(EngineConfig config, const std::string& reference) {
  config.plugins = {oracle_entry("oracle", reference, {.corruption = 0.3, .branching = 2, .depth = 4, .seed = 3})};
  return with_speculation(config, "oracle", 8);
}

EngineConfig with_ngram_drafts(EngineConfig config) {
  config.plugins = {ngram_entry(2)};
  return with_speculation(config, config.plugins[0].name, 8);
}

std::vector<std::vector<int32_t>> outputs_of(const std::vector<RunResult>& runs) {
  std::vector<std::vector<int32_t>> out;
  for (const RunResult& r : runs) out.push_back(r.output);
  return out;
}

}  // namespace drift::test
