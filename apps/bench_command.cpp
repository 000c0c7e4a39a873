// drift bench: runs a prompt set through one or more configs in ONE process, each with several
// speculation variants (per-request overrides: "off" and draft providers), and prints a table plus
// JSON: output tokens/s, time per output token, TTFT, acceptance length, draft and accepted
// tokens, and each variant's speedup over its config's non-speculative run, measured side by side.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/bench_report.h"
#include "apps/bench_scenario.h"
#include "apps/bench_sweep.h"
#include "apps/chat_formatter.h"
#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "apps/structured_output_options.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/parallel_samples.h"
#include "core/text_file.h"

namespace po = boost::program_options;

namespace drift::app {
namespace {

struct BenchArgs {
  EngineSource source;
  std::vector<std::string> compare_configs;
  std::string prompts_path;
  int64_t num_prompts = 0;
  int64_t max_new_tokens = 128;
  int64_t concurrency = 1;
  int64_t samples = 1;  // --n: parallel samples per prompt
  int64_t system_prompt_tokens = 0;
  std::string scenario;
  std::string variants;
  std::string json_path;
  std::string write_reference;
  bool ignore_eos = false;
  bool chat = false;        // text prompts are user turns rendered with the model's chat template
  bool warm_cache = false;  // variants share the prefix cache (later ones skip the prefill)
  bool sweep = false;
  SweepOptions sweep_options;
  std::string sweep_long_batches = "1";
  StructuredOutputArgs structured;  // what "NAME/grammar" variants constrain their outputs to
};

// The first config's first outputs: of its "off" variant, and of its "off/grammar" one (a
// constrained output is compared with constrained ones only).
struct FirstOutputs {
  std::vector<std::vector<int32_t>> plain, constrained;
};

// The first turn of each line: "turns" (MT-Bench), "prompt" (text) or "prompt_ids". With `chat`,
// text is one user turn that the model's chat template renders.
std::vector<std::vector<int32_t>> load_prompts(const std::string& path, const Engine& engine, int64_t limit,
                                               const ChatFormatter* chat) {
  std::vector<std::vector<int32_t>> prompts;
  const std::string text = read_text_file(path, "prompt set");
  size_t line_no = 0;
  for (size_t begin = 0; begin < text.size() && (limit <= 0 || static_cast<int64_t>(prompts.size()) < limit);) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{} line {}", path, line_no);
    const nlohmann::json j = parse_json_input(line, where);
    if (j.contains("prompt_ids")) {
      prompts.push_back(j["prompt_ids"].get<std::vector<int32_t>>());
      continue;
    }
    std::string prompt;
    if (j.contains("turns") && j["turns"].is_array() && !j["turns"].empty() && j["turns"][0].is_string())
      prompt = j["turns"][0].get<std::string>();
    else if (j.contains("prompt") && j["prompt"].is_string())
      prompt = j["prompt"].get<std::string>();
    else
      fail("{}: expected \"turns\" (a list of strings), \"prompt\" (a string) or \"prompt_ids\"", where);
    if (!engine.tokenizer()) fail("{}: text prompts need a tokenizer, and the model has none (use prompt_ids)", where);
    prompts.push_back(chat ? chat->encode(single_turn("", prompt)) : engine.tokenizer()->encode_prompt(prompt));
  }
  if (prompts.empty()) fail("{}: no prompts", path);
  return prompts;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t begin = 0; begin <= text.size();) {
    const size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

// --sweep-long-batches "1,8": some of the sweep's decode batches (kSweepDecodeBatches), named.
std::vector<int64_t> parse_long_batches(const std::string& text) {
  const auto& known = kSweepDecodeBatches;
  std::vector<int64_t> out;
  for (const std::string& item : split_list(text)) {
    const auto it =
        std::find_if(std::begin(known), std::end(known), [&](int64_t batch) { return std::to_string(batch) == item; });
    if (it == std::end(known))
      fail("--sweep-long-batches {}: '{}' is not one of the sweep's decode batches {}", text, item,
           fmt::join(known, ", "));
    out.push_back(*it);
  }
  if (out.empty()) fail("--sweep-long-batches '{}': name at least one of {}", text, fmt::join(known, ", "));
  return out;
}

// "off", plus "config" (the config's own [speculative] setting) when it speculates, unless
// --variants says otherwise.
std::vector<std::string> variants_for(const BenchArgs& a, const EngineConfig& config) {
  if (!a.variants.empty()) return split_list(a.variants);
  std::vector<std::string> v = {"off"};
  if (config.speculative.enabled && !config.speculative.draft_provider.empty()) v.push_back("config");
  return v;
}

// How a variant shows in the report: "config" as its provider, with the hybrid's fallback.
std::string variant_label(const std::string& variant, const EngineConfig& config) {
  if (variant == "config/full") return variant_label("config", config) + "/full";
  if (variant != "config") return variant;
  const auto& s = config.speculative;
  return s.fallback_provider.empty() ? s.draft_provider : s.draft_provider + "+" + s.fallback_provider;
}

// A shared "system prompt" of n tokens put before every prompt: the prompt set's own tokens,
// concatenated and cycled (realistic ids, the same with or without a tokenizer).
std::vector<std::vector<int32_t>> with_system_prompt(std::vector<std::vector<int32_t>> prompts, int64_t n) {
  if (n <= 0) return prompts;
  std::vector<int32_t> pool;
  for (const auto& p : prompts) pool.insert(pool.end(), p.begin(), p.end());
  std::vector<int32_t> system;
  for (int64_t i = 0; i < n; ++i) system.push_back(pool[static_cast<size_t>(i) % pool.size()]);
  for (auto& p : prompts) p.insert(p.begin(), system.begin(), system.end());
  return prompts;
}

void write_reference(const std::string& path, const std::vector<std::vector<int32_t>>& prompts,
                     const std::vector<std::vector<int32_t>>& outputs) {
  std::ofstream file(path);
  for (size_t i = 0; i < prompts.size(); ++i)
    file << nlohmann::json{{"prompt_ids", prompts[i]}, {"output_ids", outputs[i]}}.dump() << "\n";
  if (!file.good()) fail("--write-reference {}: could not write the file", path);
}

// A variant's suffixes: "/grammar" (outputs constrained by the structured-output options) and
// "/full" (drafts verified against the whole context whatever the verification policy).
struct VariantSpec {
  std::string provider;
  bool full = false, grammar = false;
};

VariantSpec parse_variant(std::string variant) {
  VariantSpec spec;
  auto strip = [&](const char* suffix) {
    const std::string s = suffix;
    if (variant.size() <= s.size() || !variant.ends_with(s)) return false;
    variant.resize(variant.size() - s.size());
    return true;
  };
  spec.grammar = strip("/grammar");
  spec.full = strip("/full");
  spec.provider = variant;
  return spec;
}

// `first` holds the first config's "off" outputs (plain and constrained) once they exist; every
// later run is compared with those of its kind prompt by prompt.
void bench_config(const BenchArgs& a, const EngineConfig& config, const std::string& label, BenchReport& report,
                  bool first_config, FirstOutputs& first) {
  auto engine = Engine::from_config(config);
  const std::string prompts_path = a.prompts_path.empty() ? default_prompt_set() : a.prompts_path;
  std::optional<ChatFormatter> chat;
  if (a.chat) chat.emplace(config.model.path, engine->tokenizer());
  auto prompts = with_system_prompt(load_prompts(prompts_path, *engine, a.num_prompts, chat ? &*chat : nullptr),
                                    a.system_prompt_tokens);
  if (first_config) std::fprintf(stderr, "[bench] %zu prompts from %s\n", prompts.size(), prompts_path.c_str());
  int64_t concurrency = a.concurrency;
  if (!a.scenario.empty()) {
    Scenario s = make_scenario(a.scenario, prompts, a.max_new_tokens);
    prompts = std::move(s.prompts);
    concurrency = s.concurrency;
  }
  SamplingParams params = sampling_params_from(config.generation);
  params.max_new_tokens = a.max_new_tokens;
  params.ignore_eos = a.ignore_eos;
  const std::vector<std::string> variants = variants_for(a, config);
  std::vector<std::vector<int32_t>> previous;
  const auto structured = structured_output_from_args(a.structured);
  if (structured && first_config)
    std::fprintf(stderr, "[bench] structured output (%s) compiled in %.3f ms\n",
                 grammar::structured_kind_name(structured->kind), 1e3 * structured->compile_seconds);
  for (const std::string& variant : variants) {
    const VariantSpec spec = parse_variant(variant);
    params.speculative = spec.provider == "config" ? "" : spec.provider;  // "": the engine's [speculative]
    params.full_verification = spec.full;
    if (spec.grammar && !structured)
      fail("--variants {}: a /grammar variant needs a structured output (--json-schema, --regex, ...)", variant);
    params.structured_output = spec.grammar ? structured : nullptr;
    // Every variant starts cold (hits come from its own prompts), unless asked to share the cache.
    if (!a.warm_cache) engine->reset_prefix_cache();
    std::vector<std::vector<int32_t>> outputs;
    const std::string shown = variant_label(variant, config);
    VariantResult result = run_variant(*engine, label, shown, prompts, a.samples, params, concurrency, outputs);
    std::vector<std::vector<int32_t>>& first_off = spec.grammar ? first.constrained : first.plain;
    if (first_config && spec.provider == "off" && !spec.full && first_off.empty()) {
      first_off = outputs;
    } else if (first_off.size() == outputs.size()) {
      result.outputs_equal_to_first = 0;
      for (size_t i = 0; i < outputs.size(); ++i) result.outputs_equal_to_first += outputs[i] == first_off[i] ? 1 : 0;
      std::fprintf(stderr, "[bench] %s / %s: %ld of %zu outputs equal the first config's \"off\" outputs\n",
                   label.c_str(), shown.c_str(), static_cast<long>(result.outputs_equal_to_first), outputs.size());
    }
    report.add(std::move(result));
    if (!previous.empty() && previous.size() == outputs.size()) {
      int64_t same = 0;
      for (size_t i = 0; i < outputs.size(); ++i) same += outputs[i] == previous[i] ? 1 : 0;
      std::fprintf(stderr, "[bench] %s / %s: %ld of %zu outputs equal the previous variant's\n", label.c_str(),
                   shown.c_str(), static_cast<long>(same), outputs.size());
    }
    // Each variant's outputs replace the last's: an oracle draft provider replays the latest run.
    if (first_config && !a.write_reference.empty()) write_reference(a.write_reference, prompts, outputs);
    previous = outputs;
  }
}

int run_bench(const std::vector<std::string>& args) {
  BenchArgs a;
  po::options_description desc("drift bench options");
  desc.add_options()("help,h", "show this help");
  add_engine_options(desc, a.source);
  desc.add_options()("compare", po::value(&a.compare_configs),
                     "another config to run in the same process (repeatable)")(
      "prompts", po::value(&a.prompts_path),
      "JSON-lines prompt set (default: MT-Bench, datasets/mt_bench.jsonl shipped with drift)")(
      "num-prompts", po::value(&a.num_prompts), "use the first N prompts (0 = all)")(
      "max-new-tokens", po::value(&a.max_new_tokens), "tokens to generate per prompt (default 128)")(
      "concurrency", po::value(&a.concurrency), "requests in flight at once (default 1)")(
      "n", po::value(&a.samples),
      "parallel samples per prompt, sharing its KV (OpenAI's n; each counts as a request; default 1)")(
      "system-prompt-tokens", po::value(&a.system_prompt_tokens),
      "put one shared N-token prefix (the prompt set's own tokens) before every prompt: a prefix-cache workload")(
      "scenario", po::value(&a.scenario),
      "a named long-context workload instead of the prompt set: single-16k, single-32k, single-64k (one sequence at "
      "that context) or batch4-16k (four at 16K); prompts are the set's tokens cycled")(
      "variants", po::value(&a.variants),
      "comma-separated speculation variants per config: off, config (its [speculative] as written, a "
      "hybrid's fallback included) and/or draft provider names, each optionally with /full (verified against the "
      "whole context whatever [speculative] verification says) and then /grammar (outputs constrained by "
      "--json-schema, --regex, ...: e.g. off,off/grammar,ngram/grammar) (default: off,config)")(
      "warm-cache", po::bool_switch(&a.warm_cache),
      "variants share the prefix cache instead of each starting cold (with a prefix_cache plugin, later variants "
      "skip the prefill: long-context decode comparisons)")("ignore-eos", po::bool_switch(&a.ignore_eos),
                                                            "always generate max-new-tokens tokens")(
      "chat", po::bool_switch(&a.chat), "text prompts are user turns, rendered with the model's chat template")(
      "json", po::value(&a.json_path), "also write the results as JSON to this file")(
      "write-reference", po::value(&a.write_reference),
      "write the first config's outputs as JSON lines (prompt_ids, output_ids), e.g. for an oracle draft provider, "
      "after each of its variants (each replacing the last's: the next variant's oracle replays it)")(
      "sweep", po::bool_switch(&a.sweep),
      "time the model forward instead (docs/cuda.md): decode at batch 1/8/32/64 and contexts 512/4K/32K, "
      "prefill 512/8K, verify trees of 4-32 nodes, each against the measured copy bandwidth")(
      "sweep-repeats", po::value(&a.sweep_options.repeats), "timed forwards per sweep row (median; default 10)")(
      "sweep-max-context", po::value(&a.sweep_options.max_context),
      "longest sweep context, decode and prefill (default 32768)")(
      "sweep-only", po::value(&a.sweep_options.only), "sweep rows to run: decode,prefill,verify,graphs (default all)")(
      "sweep-long-batches", po::value(&a.sweep_long_batches),
      "decode batches also measured at the long contexts (4K, 32K), comma-separated from 1 8 32 64 (default 1; the "
      "KV pool is sized for the largest)");
  add_structured_output_options(desc, a.structured);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm, "usage: drift bench (--config F | --model DIR) [--compare F2 ...]")) return 0;
  if (a.max_new_tokens < 1) fail("--max-new-tokens {}: must be >= 1", a.max_new_tokens);
  if (a.concurrency < 1) fail("--concurrency {}: must be >= 1", a.concurrency);
  if (a.samples < 1 || a.samples > kMaxParallelSamples)
    fail("--n {}: must be in [1, {}]", a.samples, kMaxParallelSamples);
  if (a.num_prompts < 0) fail("--num-prompts {}: must be >= 0", a.num_prompts);
  if (a.system_prompt_tokens < 0) fail("--system-prompt-tokens {}: must be >= 0", a.system_prompt_tokens);

  // Every config as bench runs it: the shared engine options (--adaptive, --backend, ...) apply to
  // each.
  const EngineConfig primary = resolve_engine_config(a.source);
  if (a.sweep) {
    if (a.sweep_options.repeats < 1) fail("--sweep-repeats {}: must be >= 1", a.sweep_options.repeats);
    if (a.sweep_options.max_context < 512) fail("--sweep-max-context {}: must be >= 512", a.sweep_options.max_context);
    a.sweep_options.long_batches = parse_long_batches(a.sweep_long_batches);
    const nlohmann::json json = run_forward_sweep(primary, a.sweep_options);
    if (!a.json_path.empty()) {
      std::ofstream file(a.json_path);
      file << json.dump(2) << "\n";
      if (!file.good()) fail("--json {}: could not write the file", a.json_path);
    }
    return 0;
  }
  BenchReport report;
  FirstOutputs first_off;
  bench_config(a, primary, primary.source.empty() ? a.source.model_dir : primary.source, report, true, first_off);
  for (const std::string& path : a.compare_configs) {
    EngineSource other = a.source;
    other.config_path = path;
    bench_config(a, resolve_engine_config(other), path, report, false, first_off);
  }
  std::fputs(report.table().c_str(), stdout);
  const std::string json = report.json().dump(2);
  std::printf("%s\n", json.c_str());
  if (!a.json_path.empty()) {
    std::ofstream file(a.json_path);
    file << json << "\n";
    if (!file.good()) fail("--json {}: could not write the file", a.json_path);
  }
  return 0;
}

}  // namespace

DRIFT_REGISTER_COMMAND(bench, "bench", "benchmark configs and speculation variants on a prompt set", run_bench);

}  // namespace drift::app
