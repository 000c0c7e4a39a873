// drift generate: run prompts (text or token ids) through the engine, batched, and print the
// generated text — streamed for a single prompt — or one JSON object per prompt.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/chat_formatter.h"
#include "apps/command_registry.h"
#include "apps/engine_options.h"
#include "apps/plugin_stats_json.h"
#include "apps/sampling_options.h"
#include "apps/verification_json.h"
#include "core/engine.h"
#include "core/error.h"
#include "core/parallel_samples.h"

namespace po = boost::program_options;

namespace drift::app {
namespace {

struct GenerateArgs {
  EngineSource source;
  std::vector<std::string> prompts;
  std::vector<std::string> prompt_ids;
  std::vector<po::option> ordered;  // every option as given: prompts run in command-line order
  SamplingArgs sampling;
  bool chat = false;   // each --prompt is a user turn rendered with the model's chat template
  std::string system;  // the system message of those turns
  bool json = false;
  int64_t samples = 1;  // --n: parallel samples per prompt
};

// One prompt as given on the command line. A prompt that cannot even be tokenized (invalid UTF-8,
// a BOS the tokenizer cannot supply) fails alone: it carries its error and never reaches the
// engine, and the others run exactly as they would without it.
struct Prompt {
  std::vector<int32_t> ids;
  std::string error;              // why it could not become a request
  std::vector<int64_t> requests;  // the engine's ids once added: one per sample
};

// With --chat, the text is one user turn that the model's chat template renders.
Prompt prompt_from_text(const std::string& text, const Engine& engine, const GenerateArgs& a,
                        const ChatFormatter* chat, size_t index) {
  Prompt p;
  if (!engine.tokenizer()) {
    p.error = "--prompt needs a tokenizer, and the model directory has none; use --prompt-ids";
    return p;
  }
  try {
    p.ids = chat ? chat->encode(single_turn(a.system, text)) : engine.tokenizer()->encode_prompt(text);
  } catch (const DriftError& e) {
    p.error = fmt::format("--prompt (prompt {}): {}", index, e.what());
  }
  return p;
}

std::vector<Prompt> collect_prompts(const GenerateArgs& a, const Engine& engine, const ChatFormatter* chat) {
  std::vector<Prompt> prompts;
  for (const po::option& option : a.ordered) {
    for (const std::string& value : option.value) {
      if (option.string_key == "prompt") {
        prompts.push_back(prompt_from_text(value, engine, a, chat, prompts.size()));
      } else if (option.string_key == "prompt-ids") {
        prompts.push_back(Prompt{parse_id_list(value, "--prompt-ids"), "", {}});
      }
    }
  }
  if (prompts.empty()) fail("give at least one --prompt TEXT or --prompt-ids 1,2,3");
  return prompts;
}

nlohmann::json speculation_json(const SpeculationStats& s) {
  return {{"draft_tokens", s.draft_tokens},
          {"accepted_tokens", s.accepted_tokens},
          {"rewound_tokens", s.rewound_tokens},
          {"verify_steps", s.verify_steps},
          {"acceptance_length", s.acceptance_length()},
          {"mean_draft_prob", s.mean_draft_prob()},
          {"mean_accepted_draft_prob", s.mean_accepted_draft_prob()},
          {"committed_per_step", s.committed_per_step}};
}

nlohmann::json result_json(const Sequence& seq, double seconds, std::optional<size_t> sample) {
  nlohmann::json j;
  if (sample) j["sample"] = *sample;
  j["prompt_ids"] = seq.prompt;
  j["output_ids"] = seq.output;
  j["text"] = seq.text;
  j["finish_reason"] = finish_reason_name(seq.finish_reason);
  if (!seq.error.empty()) j["error"] = seq.error;
  j["stats"] = {{"prompt_tokens", seq.stats.prompt_tokens},
                {"output_tokens", seq.stats.output_tokens},
                {"steps", seq.stats.steps},
                {"preemptions", seq.stats.preemptions},
                {"ttft_ms", seq.stats.ttft_ms},
                {"latency_ms", seq.stats.latency_ms},
                {"tokens_per_second", seconds > 0 ? seq.stats.output_tokens / seconds : 0.0},
                {"seed", seq.seed},
                {"cached_tokens", seq.stats.cached_tokens},
                {"speculation", speculation_json(seq.stats.speculation)}};
  return j;
}

nlohmann::json prefix_cache_json(const PrefixCacheMetrics& m) {
  return {{"queries", m.queries},           {"hits", m.hits},
          {"query_tokens", m.query_tokens}, {"hit_tokens", m.hit_tokens},
          {"hit_rate", m.hit_rate()},       {"evicted_pages", m.evicted_pages},
          {"pages_held", m.pages_held}};
}

// The closing line of --json output: the run's engine-wide figures.
nlohmann::json summary_json(const Engine& engine, size_t prompts, int64_t tokens, double seconds) {
  const EngineMetrics& m = engine.metrics();
  return {{"summary",
           {{"prompts", prompts},
            {"output_tokens", tokens},
            {"seconds", seconds},
            {"tokens_per_second", seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0},
            {"engine_steps", m.steps},
            {"prefill_tokens", m.prefill_tokens},
            {"preemptions", m.preemptions},
            {"speculation", speculation_json(m.speculation)},
            {"drafts_by_provider", m.drafts_by_provider},
            {"prefix_cache", prefix_cache_json(m.prefix_cache)},
            {"verification", verification_json(m.verification)},
            {"plugin_stats", plugin_stats_json(engine)},
            {"plugin_memory", plugin_memory_json(engine)}}}};
}

// A prompt that never became a request: the same fields, nothing generated.
nlohmann::json failed_prompt_json(const Prompt& prompt) {
  return {{"prompt_ids", prompt.ids}, {"output_ids", nlohmann::json::array()}, {"text", ""},
          {"finish_reason", finish_reason_name(FinishReason::Error)}, {"error", prompt.error}};
}

// Text goes out with its length, never as a C string: generated text may contain NUL bytes.
void write_stdout(const std::string& text) {
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    fail("writing the generated text to standard output failed: {}", std::strerror(errno));
}

// Runs all requests to completion; with `stream`, prints the single request's text as it grows
// (the engine's text: settled UTF-8, stop strings never shown).
void run_all(Engine& engine, bool stream) {
  while (engine.has_unfinished()) {
    for (const RequestOutput& out : engine.step()) {
      if (!stream || out.text.empty()) continue;
      write_stdout(out.text);
      if (std::fflush(stdout) != 0) fail("writing the generated text to standard output failed: {}", std::strerror(errno));
    }
  }
}

// The generated text, or the output ids as a JSON list when the model has no tokenizer.
std::string output_text(const Engine& engine, const Sequence& seq) {
  return engine.tokenizer() ? seq.text : nlohmann::json(seq.output).dump();
}

// Plain-text output of several prompts or samples: each result under a header line naming its
// prompt (and sample) and how it ended, so a failed prompt leaves a visible trace and results
// cannot run into each other.
void print_plain_result(size_t index, const Prompt& prompt, const Engine& engine) {
  if (prompt.requests.empty()) {
    std::printf("[prompt %zu] finish_reason=error\n", index);
    return;
  }
  for (size_t i = 0; i < prompt.requests.size(); ++i) {
    const Sequence& seq = engine.request(prompt.requests[i]);
    const std::string sample = prompt.requests.size() > 1 ? fmt::format(" sample {}", i) : "";
    std::printf("[prompt %zu%s] finish_reason=%s output_tokens=%ld\n", index, sample.c_str(),
                finish_reason_name(seq.finish_reason), static_cast<long>(seq.stats.output_tokens));
    write_stdout(output_text(engine, seq));
    std::printf("\n");
  }
}

int run_generate(const std::vector<std::string>& args) {
  GenerateArgs a;
  po::options_description desc("drift generate options");
  desc.add_options()("help,h", "show this help");
  add_engine_options(desc, a.source);
  desc.add_options()("prompt", po::value(&a.prompts), "prompt text (repeatable: several prompts run batched)")(
      "prompt-ids", po::value(&a.prompt_ids), "prompt as comma-separated token ids (repeatable)")(
      "chat", po::bool_switch(&a.chat), "each --prompt is a user turn, rendered with the model's chat template")(
      "system", po::value(&a.system), "with --chat: the system message (default: the template's own)")(
      "json", po::bool_switch(&a.json), "one JSON object per prompt (per sample) per line")(
      "n", po::value(&a.samples), "parallel samples per prompt, sharing its KV (sample i uses --seed + i)");
  add_sampling_options(desc, a.sampling);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm, "usage: drift generate (--config F | --model DIR) --prompt TEXT ...", &a.ordered))
    return 0;
  read_sampling_options(vm, a.sampling);
  if (!a.chat && vm.count("system")) fail("--system needs --chat");
  if (a.chat && !a.prompt_ids.empty()) fail("--chat renders --prompt text; it cannot apply to --prompt-ids");

  EngineConfig config = resolve_engine_config(a.source);
  const SamplingParams params = sampling_params_from_args(a.sampling, config.generation);
  auto engine = Engine::from_config(config);
  std::optional<ChatFormatter> chat;
  if (a.chat) chat.emplace(config.model.path, engine->tokenizer());
  std::vector<Prompt> prompts = collect_prompts(a, *engine, chat ? &*chat : nullptr);

  if (a.samples < 1 || a.samples > kMaxParallelSamples)
    fail("--n {}: must be in [1, {}]", a.samples, kMaxParallelSamples);
  for (Prompt& p : prompts)
    if (p.error.empty()) p.requests = engine->add_samples(p.ids, params, a.samples);
  const bool several = prompts.size() > 1 || a.samples > 1;
  const bool stream = !a.json && !several && engine->tokenizer();
  const auto start = Clock::now();
  run_all(*engine, stream);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  bool any_error = false;
  int64_t total_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const Prompt& prompt = prompts[i];
    if (prompt.requests.empty()) {
      any_error = true;
      std::fprintf(stderr, "drift generate: prompt %zu failed: %s\n", i, prompt.error.c_str());
      if (a.json)
        write_stdout(failed_prompt_json(prompt).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
      if (!a.json && several) print_plain_result(i, prompt, *engine);
      continue;
    }
    for (size_t k = 0; k < prompt.requests.size(); ++k) {
      const Sequence& seq = engine->request(prompt.requests[k]);
      const bool failed = seq.finish_reason == FinishReason::Error;
      total_tokens += seq.stats.output_tokens;
      any_error |= failed;
      if (failed) std::fprintf(stderr, "drift generate: prompt %zu failed: %s\n", i, seq.error.c_str());
      // Decoded text is valid UTF-8 (invalid bytes decode to U+FFFD, as in HF); replacing instead of
      // throwing keeps one odd result from costing the others their line if that ever breaks.
      const std::optional<size_t> sample = a.samples > 1 ? std::optional(k) : std::nullopt;
      if (a.json)
        write_stdout(result_json(seq, seconds, sample).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                     "\n");
      else if (!several && !stream && !failed)
        write_stdout(output_text(*engine, seq));
    }
    if (!a.json && several) print_plain_result(i, prompt, *engine);
  }
  if (!a.json && !several) std::printf("\n");
  if (a.json) write_stdout(summary_json(*engine, prompts.size(), total_tokens, seconds).dump() + "\n");
  std::fprintf(stderr, "[stats] %zu prompt(s), %ld tokens in %.3f s (%.1f tokens/s), %ld engine steps\n",
               prompts.size(), static_cast<long>(total_tokens), seconds, seconds > 0 ? total_tokens / seconds : 0.0,
               static_cast<long>(engine->metrics().steps));
  if (const SpeculationStats& s = engine->metrics().speculation; s.draft_tokens > 0)
    std::fprintf(stderr, "[stats] speculation: %ld draft tokens, %ld accepted, %ld rewound, acceptance length %.2f\n",
                 static_cast<long>(s.draft_tokens), static_cast<long>(s.accepted_tokens),
                 static_cast<long>(s.rewound_tokens), s.acceptance_length());
  if (const PrefixCacheMetrics& c = engine->metrics().prefix_cache; c.queries > 0)
    std::fprintf(stderr, "[stats] prefix cache: %ld queries, %ld hits, %ld of %ld prompt tokens cached (%.1f%%), %ld pages held, %ld evicted\n",
                 static_cast<long>(c.queries), static_cast<long>(c.hits), static_cast<long>(c.hit_tokens),
                 static_cast<long>(c.query_tokens), 100.0 * c.hit_rate(), static_cast<long>(c.pages_held),
                 static_cast<long>(c.evicted_pages));
  return any_error ? 1 : 0;
}

}  // namespace

DRIFT_REGISTER_COMMAND(generate, "generate", "generate text for one or more prompts", run_generate);

}  // namespace drift::app
