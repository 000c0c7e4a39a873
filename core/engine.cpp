#include "core/engine.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/batch_builder.h"
#include "core/error.h"
#include "core/grammar/constraint_registry.h"
#include "core/grammar/structured_output.h"
#include "core/parallel_samples.h"
#include "core/plugin/engine_plugins.h"
#include "core/sampler.h"
#include "core/speculation/grammar_drafts.h"
#include "core/window_page_steps.h"

namespace drift {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::None:
      return "none";
    case FinishReason::Length:
      return "length";
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Abort:
      return "abort";
    case FinishReason::Error:
      return "error";
  }
  return "?";
}

Engine::Engine(EngineOptions options, std::unique_ptr<ModelExecutor> executor)
    : options_(std::move(options)), executor_(std::move(executor)) {
  DRIFT_CHECK(options_.num_pages > 0, "engine needs at least one KV page, got {}", options_.num_pages);
  kv_ = std::make_unique<KVCacheManager>(options_.num_pages, options_.block_size);
  kv_->set_page_copier([this](PageId src, PageId dst) { executor_->copy_page(src, dst); });
  kv_->set_slot_mover(
      [this](std::span<const int64_t> src, std::span<const int64_t> dst) { executor_->move_slots(src, dst); });
  if (options_.window_pages > 0) {
    kv_->enable_window_pages(options_.window_pages, options_.window);
    kv_->window_pages()->set_page_copier([this](PageId src, PageId dst) { executor_->copy_window_page(src, dst); });
    kv_->window_pages()->set_slot_mover(
        [this](std::span<const int64_t> src, std::span<const int64_t> dst) { executor_->move_window_slots(src, dst); });
  }
  scheduler_ = std::make_unique<Scheduler>(
      options_.limits, make_capacity_policy(options_.capacity_policy, options_.limits.max_seq_len), *kv_);
  speculator_ = std::make_unique<Speculator>(
      options_.speculation, options_.limits.max_seq_len, *kv_,
      SpeculatorMetrics{metrics_.speculation, metrics_.acceptance_histogram, metrics_.drafts_by_provider,
                        metrics_.verification, metrics_.draft_timing, metrics_.draft_budgets,
                        metrics_.retired_requests});
  seed_counter_ = std::random_device{}();
}

Engine::~Engine() {
  // Plugins are destroyed before the scheduler and KV cache they reference.
  if (plugins_) scheduler_->set_observer(nullptr);
  plugins_.reset();
}

void Engine::enable_plugins(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                            const std::function<void(HostCallbacks&)>& install_services) {
  enable_plugins(config, model, special, install_services, nullptr);
}

void Engine::enable_plugins(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                            const std::function<void(HostCallbacks&)>& install_services,
                            std::unique_ptr<PluginHost> preloaded) {
  auto lookup = [this](int64_t id) -> const Sequence* {
    auto it = requests_.find(id);
    return it == requests_.end() ? nullptr : it->second.get();
  };
  // An engine around a bare executor (tests) has no backend: it computes in fp32 on the CPU.
  const Device device = backend_ ? backend_->device() : Device::CPU;
  const DType dtype = backend_ ? backend_->compute_dtype() : DType::F32;
  void* stream = backend_ ? backend_->stream_handle() : nullptr;
  plugins_ = std::make_unique<EnginePlugins>(config, model,
                                             EngineParts{*kv_, *scheduler_, *executor_, lookup, special, device, dtype,
                                                         stream, metrics_.prefix_cache, metrics_.draft_timing},
                                             install_services, std::move(preloaded));
  scheduler_->set_observer(plugins_.get());
  speculator_->attach(plugins_.get(), {model.num_layers, model.num_kv_heads, options_.block_size});
}

std::string Engine::validate_request(const Sequence& seq) const {
  if (seq.prompt.empty()) return "prompt is empty";
  const int64_t vocab = executor_->vocab_size();
  for (size_t i = 0; i < seq.prompt.size(); ++i)
    if (seq.prompt[i] < 0 || seq.prompt[i] >= vocab)
      return fmt::format("prompt token id {} at index {} is out of range [0, {})", seq.prompt[i], i, vocab);
  if (seq.total_len() >= options_.limits.max_seq_len)
    return fmt::format("prompt has {} tokens; max_seq_len is {} (room is needed for at least one new token)",
                       seq.total_len(), options_.limits.max_seq_len);
  if (std::string bad = validate_sampling_params(seq.params); !bad.empty()) return "sampling: " + bad;
  for (const auto& [token, bias] : seq.params.logit_bias)
    if (token >= vocab) return fmt::format("logit_bias: token id {} is out of range [0, {})", token, vocab);
  if (seq.params.cache_salt.find('\0') != std::string::npos) return "cache_salt contains a NUL byte";
  if (!seq.params.stop.empty()) {
    if (!tokenizer_) return "stop strings need a tokenizer, and the model has none (use stop_token_ids)";
    if (std::string bad = validate_stop_strings(seq.params.stop); !bad.empty()) return "stop: " + bad;
  }
  if (seq.params.structured_output && !tokenizer_)
    return fmt::format("a structured output ({}) needs the model's tokenizer, and the model has none",
                       grammar::structured_kind_name(seq.params.structured_output->kind));
  if (std::string bad = speculator_->check_request(seq); !bad.empty()) return bad;
  if (!scheduler_->can_ever_fit(seq))
    return fmt::format("request needs {} KV pages (prompt {} + max_new_tokens {}), the cache has only {}",
                       worst_case_pages(seq, options_.limits.max_seq_len, *kv_), seq.prompt.size(),
                       seq.params.max_new_tokens, kv_->num_pages());
  return "";
}

int64_t Engine::add_request(std::vector<int32_t> prompt, SamplingParams params) {
  return add_sequence(std::move(prompt), std::move(params), -1);
}

std::vector<int64_t> Engine::add_samples(const std::vector<int32_t>& prompt, const SamplingParams& params, int64_t n) {
  if (n < 1 || n > kMaxParallelSamples)
    fail("n = {}: the number of samples must be in [1, {}]", n, kMaxParallelSamples);
  const int64_t group = n > 1 ? next_id_ : -1;
  std::vector<int64_t> ids;
  try {
    for (int64_t i = 0; i < n; ++i) {
      SamplingParams sample = params;
      // Sample i of a seeded request draws from seed + i (vLLM's rule): sample 0 is the request
      // alone, and every sample can be reproduced on its own.
      if (params.seed) sample.seed = *params.seed + static_cast<uint64_t>(i);
      ids.push_back(add_sequence(prompt, std::move(sample), group));
    }
  } catch (...) {  // all or none: the samples already added must not run unseen
    for (int64_t id : ids) {
      abort(id);
      release(id);
    }
    throw;
  }
  return ids;
}

int64_t Engine::add_sequence(std::vector<int32_t> prompt, SamplingParams params, int64_t sample_group) {
  auto seq = std::make_unique<Sequence>();
  seq->id = next_id_++;
  seq->arrival = seq->id;
  seq->sample_group = sample_group;
  seq->prompt = std::move(prompt);
  seq->params = std::move(params);
  seq->seed = seq->params.seed ? *seq->params.seed : seed_counter_++;
  seq->stats.seed = seq->seed;
  seq->stats.prompt_tokens = static_cast<int64_t>(seq->prompt.size());
  Sequence& ref = *seq;
  requests_[ref.id] = std::move(seq);
  std::string error = validate_request(ref);
  if (error.empty()) error = attach_grammar(ref);
  if (!error.empty()) {
    finish(ref, FinishReason::Error, fmt::format("request {}: {}", ref.id, error));
  } else {
    if (tokenizer_)
      texts_.emplace(ref.id, OutputText(*tokenizer_, ref.params.stop, ref.params.include_stop_str_in_output));
    speculator_->start(ref);
    scheduler_->add(&ref);
  }
  return ref.id;
}

std::string Engine::attach_grammar(Sequence& seq) {
  if (!seq.params.structured_output) return "";
  try {
    if (!grammars_) grammars_ = make_grammars();
    seq.grammar = grammars_->constraint(*seq.params.structured_output);
    seq.grammar_state = seq.grammar->start();
  } catch (const std::exception& e) {
    return fmt::format("structured output: {}", e.what());
  }
  return "";
}

std::unique_ptr<grammar::ConstraintRegistry> Engine::make_grammars() const {
  const int workers = options_.grammar_threads >= 0
                          ? options_.grammar_threads
                          : grammar::default_mask_workers(std::thread::hardware_concurrency());
  return std::make_unique<grammar::ConstraintRegistry>(*tokenizer_, static_cast<int32_t>(executor_->vocab_size()),
                                                       options_.eos_ids, workers, options_.grammar_explored_masks);
}

RequestOutput& Engine::output_for(Sequence& seq) {
  RequestOutput& out = pending_[seq.id];
  out.id = seq.id;
  return out;
}

void Engine::finish(Sequence& seq, FinishReason reason, std::string error) {
  scheduler_->remove(&seq);
  seq.status = SequenceStatus::Finished;
  seq.finish_reason = reason;
  seq.error = std::move(error);
  seq.stats.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - seq.arrival_time).count();
  if (plugins_) plugins_->finished(seq);
  RequestOutput& out = output_for(seq);
  if (auto text = texts_.find(seq.id); text != texts_.end()) {  // what a stop string might have begun
    const std::string rest = text->second.finish();
    out.text += rest;
    seq.text += rest;
    texts_.erase(text);
  }
  out.finished = true;
  out.finish_reason = reason;
  out.error = seq.error;
}

void Engine::abort(int64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->finished()) return;
  finish(*it->second, FinishReason::Abort);
}

std::map<std::string, std::string> Engine::plugin_stats() const {
  return plugins_ ? plugins_->host().plugin_stats() : std::map<std::string, std::string>{};
}

std::vector<PluginInfo> Engine::plugin_infos() const {
  return plugins_ ? plugins_->host().plugins() : std::vector<PluginInfo>{};
}

int64_t Engine::reset_prefix_cache() {
  if (has_unfinished()) fail("reset_prefix_cache: requests are still unfinished; reset the cache while idle");
  return plugins_ ? plugins_->release_all_cached() : 0;
}

bool Engine::has_unfinished() const {
  return !pending_.empty() || !scheduler_->running().empty() || !scheduler_->waiting().empty();
}

const Sequence& Engine::request(int64_t id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) fail("unknown request id {}", id);
  return *it->second;
}

void Engine::release(int64_t id) {
  auto it = requests_.find(id);
  if (it != requests_.end() && it->second->finished()) requests_.erase(it);
}

// The rows each chunk wants picked, in logit-row order: its root, then its draft nodes, each with
// its logit adjustments (a node's path counts as output, as it would when plain decoding reached
// it); add_masks gives them their structured-output masks.
std::vector<RowSampling> Engine::logit_rows(const SchedulerOutput& scheduled) const {
  std::vector<RowSampling> rows;
  for (const ScheduledChunk& chunk : scheduled.chunks) {
    if (!chunk.wants_logits) continue;
    const Sequence& seq = *chunk.seq;
    std::vector<RowSampling> chunk_rows = pick_rows(chunk.draft, seq.params, seq.seed, seq.output.size());
    if (seq.params.shapes_logits())
      add_logit_adjustments(chunk_rows, chunk.draft, TokenOccurrences(seq.prompt, seq.output), options_.eos_ids);
    for (RowSampling& row : chunk_rows) rows.push_back(std::move(row));
  }
  return rows;
}

// Each row of a request under a structured output gets the mask of its position's grammar state
// (the root's from the committed output, a draft node's from its path). The masks no worker has
// started are computed here first, for every chunk, and only then are the workers' waited for.
// The successors of each request's state go to the workers: next step's masks.
void Engine::add_masks(const SchedulerOutput& scheduled, std::vector<RowSampling>& rows) {
  const auto start = Clock::now();
  std::vector<std::vector<grammar::StateId>> states(scheduled.chunks.size());
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    if (!chunk.wants_logits || !chunk.seq->grammar) continue;
    states[c] = row_states(*chunk.seq->grammar, chunk.seq->grammar_state, chunk.draft);
    for (grammar::StateId s : states[c]) chunk.seq->grammar->prepare(s);
  }
  size_t first = 0;
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    if (!chunk.wants_logits) continue;
    const size_t count = 1 + chunk.draft.size();
    const Sequence& seq = *chunk.seq;
    if (seq.grammar) {
      add_grammar_masks(std::span(rows).subspan(first, count), states[c], *seq.grammar);
      grammars_->workers().compute_ahead(seq.grammar, seq.grammar->claim_successors(seq.grammar_state));
      metrics_.masked_rows += static_cast<int64_t>(count);
    }
    first += count;
  }
  metrics_.mask_seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

Engine::TargetOutput Engine::run_target(const SchedulerOutput& scheduled, std::span<const KvView> views) {
  prepare_window_pages(scheduled, *kv_);
  ForwardBatch batch = build_forward_batch(scheduled, *kv_);
  speculator_->apply_views(batch, scheduled, views);
  std::vector<RowSampling> rows = logit_rows(scheduled);
  if (speculator_->needs_logits()) {  // a custom acceptance rule reads the shaped host logits
    add_masks(scheduled, rows);
    TargetOutput output{{}, executor_->forward(batch), {}, {}};
    const int64_t vocab = output.logits.dim(1);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r].adjustments.empty() && !rows[r].allowed) continue;
      if (output.raw_logits.empty()) {
        output.raw_logits = Tensor::zeros(output.logits.shape());
        std::memcpy(output.raw_logits.data(), output.logits.data(), output.logits.nbytes());
      }
      shape_row(output.logits.as<float>() + static_cast<int64_t>(r) * vocab, vocab, rows[r]);
    }
    return output;
  }
  TargetOutput output;
  output.picks = executor_->forward_picks(batch, rows, &output.logprobs, [&] { add_masks(scheduled, rows); });
  return output;
}

void Engine::process_results(const SchedulerOutput& scheduled, const TargetOutput& output) {
  const int64_t vocab = executor_->vocab_size();
  int64_t row = 0;
  std::vector<std::vector<int32_t>> accepted(scheduled.chunks.size());  // per chunk: nodes kept
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    Sequence& seq = *chunk.seq;
    seq.stats.steps++;
    const auto drafted = static_cast<int64_t>(chunk.draft.size());
    (chunk.count - drafted == 1 && chunk.start >= static_cast<int64_t>(seq.prompt.size()) ? metrics_.decode_tokens
                                                                                          : metrics_.prefill_tokens) +=
        chunk.count;
    if (!chunk.wants_logits) {  // a prefill chunk: its pages are offered once the whole prompt is in
      seq.num_computed += chunk.count;
      continue;
    }
    const int64_t first_row = row;
    row += 1 + drafted;
    // A custom acceptance rule reads the chunk's logit rows; the lossless one its picks.
    const float* logits = output.logits.empty() ? nullptr : output.logits.as<float>() + first_row * vocab;
    const auto picks =
        logits ? std::span<const int32_t>() : std::span<const int32_t>(output.picks).subspan(first_row, 1 + drafted);
    const AcceptedPath path = speculator_->accept(chunk, picks, logits, vocab);
    accepted[c] = commit(seq, chunk, path, path_logprobs(seq, path, output, first_row));
  }
  if (plugins_) plugins_->after_commit(metrics_.steps, scheduled, accepted);
}

// The logprobs of the path's tokens: token 0 comes from the root's row, token k from the row of
// the (k-1)-th accepted node (the row whose pick it is).
std::vector<TokenLogprobs> Engine::path_logprobs(const Sequence& seq, const AcceptedPath& path,
                                                 const TargetOutput& output, int64_t first_row) const {
  if (seq.params.logprobs < 0) return {};
  std::vector<TokenLogprobs> out;
  const int64_t vocab = executor_->vocab_size();
  for (size_t k = 0; k < path.tokens.size(); ++k) {
    const int64_t row = first_row + (k == 0 ? 0 : 1 + path.nodes[k - 1]);
    if (!output.logits.empty()) {
      const Tensor& logits = output.raw_logits.empty() ? output.logits : output.raw_logits;
      out.push_back(token_logprobs(logits.as<float>() + row * vocab, vocab, path.tokens[k], seq.params.logprobs));
    } else {
      DRIFT_CHECK(row < static_cast<int64_t>(output.logprobs.size()), "no logprobs for logit row {}", row);
      out.push_back(output.logprobs[row]);
    }
  }
  return out;
}

Tensor Engine::score(const std::vector<int32_t>& ids) {
  Sequence probe;
  probe.prompt = ids;
  probe.params.max_new_tokens = 1;
  const int64_t vocab = executor_->vocab_size();
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab) fail("token id {} at index {} is out of range [0, {})", ids[i], i, vocab);
  if (ids.empty()) fail("nothing to score: the token sequence is empty");
  if (probe.total_len() > options_.limits.max_seq_len)
    fail("{} tokens exceed max_seq_len {}", ids.size(), options_.limits.max_seq_len);
  const int64_t len = probe.total_len();
  if (kv_->pages_for_tokens(len) > kv_->num_free_pages())
    fail("scoring {} tokens needs {} KV pages, only {} are free", len, kv_->pages_for_tokens(len),
         kv_->num_free_pages());
  Tensor logits = Tensor::zeros({len, vocab});
  probe.kv = kv_->create_sequence();
  // The probe's pages go back whatever happens (a forward that throws, a window block gone).
  struct FreeProbe {
    KVCacheManager& kv;
    SeqHandle seq;
    ~FreeProbe() { kv.free(seq); }
  } free_probe{*kv_, probe.kv};
  for (int64_t start = 0; start < len; start += options_.limits.max_num_tokens) {
    const int64_t count = std::min(options_.limits.max_num_tokens, len - start);
    DRIFT_CHECK(kv_->append(probe.kv, count), "pages vanished while scoring");
    SchedulerOutput chunk;
    chunk.chunks.push_back({&probe, start, count, false, {}});
    prepare_window_pages(chunk, *kv_);
    ForwardBatch batch = build_forward_batch(chunk, *kv_);
    for (int64_t i = 0; i < count; ++i) batch.logit_rows.push_back(static_cast<int32_t>(i));
    Tensor part = executor_->forward(batch);
    if (plugins_) plugins_->forget_forward();
    std::copy(part.as<float>(), part.as<float>() + part.numel(), logits.as<float>() + start * vocab);
    probe.num_computed = start + count;
    release_passed_window_pages(chunk, *kv_);
  }
  return logits;
}

// The scheduler's plan for this step. When it plans nothing although requests wait and none
// runs, only pages cache managers hold can be in the way: they must give enough back for the
// next request, and the plan is made again.
SchedulerOutput Engine::schedule_step() {
  SchedulerOutput scheduled = scheduler_->schedule();
  const bool stalled = scheduled.chunks.empty() && scheduled.rejected.empty() && scheduler_->running().empty() &&
                       !scheduler_->waiting().empty();
  if (!stalled || !plugins_) return scheduled;
  const Sequence& next = *scheduler_->waiting().front();
  const int64_t wanted = worst_case_pages(next, options_.limits.max_seq_len, *kv_) - kv_->num_free_pages();
  if (plugins_->reclaim_to_unblock(wanted) > 0) return scheduler_->schedule();
  return scheduled;
}

// One engine step, top-down (DESIGN.md's data flow): schedule (drafts ride along as lookahead
// tokens), then on a non-empty schedule the verification views, the forward, acceptance and
// commit per chunk, and the next drafts.
std::vector<RequestOutput> Engine::step() {
  if (plugins_) plugins_->begin_step();
  const SchedulerOutput scheduled = schedule_step();
  note_schedule(scheduled);
  if (!scheduled.chunks.empty()) run_step(scheduled);
  if (options_.check_kv_integrity) kv_->check_integrity();
  std::vector<RequestOutput> outputs;
  for (auto& [id, out] : pending_) outputs.push_back(std::move(out));
  pending_.clear();
  return outputs;
}

// What scheduling decided beside the chunks: rejected requests finish, preemptions are counted.
void Engine::note_schedule(const SchedulerOutput& scheduled) {
  for (Sequence* seq : scheduled.rejected)
    finish(*seq, FinishReason::Error, fmt::format("request {}: can never fit in the KV cache", seq->id));
  metrics_.preemptions += static_cast<int64_t>(scheduled.preempted.size());
  for (const Sequence* seq : scheduled.preempted) metrics_.decode_preemptions += seq->output.empty() ? 0 : 1;
}

void Engine::run_step(const SchedulerOutput& scheduled) {
  const bool decode_only = std::all_of(scheduled.chunks.begin(), scheduled.chunks.end(), [](const ScheduledChunk& c) {
    return c.count - static_cast<int64_t>(c.draft.size()) == 1 && c.start >= static_cast<int64_t>(c.seq->prompt.size());
  });
  const std::vector<KvView> views = speculator_->choose_views(metrics_.steps, scheduled);
  const auto start = Clock::now();
  const TargetOutput output = run_target(scheduled, views);
  const double forward = std::chrono::duration<double>(Clock::now() - start).count();
  metrics_.forward_seconds += forward;
  speculator_->record_verification(views, scheduled, forward);
  if (plugins_) plugins_->after_forward(scheduled);
  metrics_.steps++;
  const double drafting_before = metrics_.draft_timing.seconds();
  process_results(scheduled, output);  // accept and commit, chunk by chunk
  release_passed_window_pages(scheduled, *kv_);
  speculator_->record_step_time(scheduled.num_tokens(), std::chrono::duration<double>(Clock::now() - start).count());
  speculator_->draft_next(metrics_.steps, scheduler_->running());  // verified next step as lookahead
  if (decode_only) {
    metrics_.decode_only_steps++;
    metrics_.decode_only_forward_seconds += forward;
    metrics_.draft_timing.decode_seconds += metrics_.draft_timing.seconds() - drafting_before;
  }
}

}  // namespace drift
