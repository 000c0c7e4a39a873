#include "core/engine.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/format.h>

#include "core/error.h"
#include "core/plugin/engine_plugins.h"
#include "core/sampler.h"

namespace drift {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::None: return "none";
    case FinishReason::Length: return "length";
    case FinishReason::Stop: return "stop";
    case FinishReason::Abort: return "abort";
    case FinishReason::Error: return "error";
  }
  return "?";
}

Engine::Engine(EngineOptions options, std::unique_ptr<ModelExecutor> executor)
    : options_(std::move(options)), executor_(std::move(executor)) {
  DRIFT_CHECK(options_.num_pages > 0, "engine needs at least one KV page, got {}", options_.num_pages);
  kv_ = std::make_unique<KVCacheManager>(options_.num_pages, options_.block_size);
  kv_->set_page_copier([this](PageId src, PageId dst) { executor_->copy_page(src, dst); });
  scheduler_ = std::make_unique<Scheduler>(
      options_.limits, make_capacity_policy(options_.capacity_policy, options_.limits.max_seq_len), *kv_);
  seed_counter_ = std::random_device{}();
}

Engine::~Engine() {
  // Plugins are destroyed before the scheduler and KV cache they reference.
  if (plugins_) scheduler_->set_observer(nullptr);
  plugins_.reset();
}

void Engine::enable_plugins(const EngineConfig& config, const ModelConfig& model, const SpecialTokens& special,
                            const std::function<void(HostCallbacks&)>& install_services) {
  auto lookup = [this](int64_t id) -> const Sequence* {
    auto it = requests_.find(id);
    return it == requests_.end() ? nullptr : it->second.get();
  };
  // An engine around a bare executor (tests) has no backend: it computes in fp32 on the CPU.
  const Device device = backend_ ? backend_->device() : Device::CPU;
  const DType dtype = backend_ ? backend_->compute_dtype() : DType::F32;
  plugins_ = std::make_unique<EnginePlugins>(
      config, model, EngineParts{*kv_, *scheduler_, *executor_, lookup, special, device, dtype}, install_services);
  scheduler_->set_observer(plugins_.get());
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
  if (!scheduler_->can_ever_fit(seq))
    return fmt::format("request needs {} KV pages (prompt {} + max_new_tokens {}), the cache has only {}",
                       worst_case_pages(seq, options_.limits.max_seq_len, *kv_), seq.prompt.size(),
                       seq.params.max_new_tokens, kv_->num_pages());
  return "";
}

int64_t Engine::add_request(std::vector<int32_t> prompt, SamplingParams params) {
  auto seq = std::make_unique<Sequence>();
  seq->id = next_id_++;
  seq->arrival = seq->id;
  seq->prompt = std::move(prompt);
  seq->params = std::move(params);
  seq->seed = seq->params.seed ? *seq->params.seed : seed_counter_++;
  seq->stats.seed = seq->seed;
  seq->stats.prompt_tokens = static_cast<int64_t>(seq->prompt.size());
  Sequence& ref = *seq;
  requests_[ref.id] = std::move(seq);
  if (std::string error = validate_request(ref); !error.empty()) {
    finish(ref, FinishReason::Error, fmt::format("request {}: {}", ref.id, error));
  } else {
    scheduler_->add(&ref);
  }
  return ref.id;
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
  out.finished = true;
  out.finish_reason = reason;
  out.error = seq.error;
}

void Engine::abort(int64_t id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || it->second->finished()) return;
  finish(*it->second, FinishReason::Abort);
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

ForwardBatch Engine::build_batch(const SchedulerOutput& scheduled) const {
  ForwardBatch batch;
  for (size_t c = 0; c < scheduled.chunks.size(); ++c) {
    const ScheduledChunk& chunk = scheduled.chunks[c];
    batch.attention.block_tables.push_back(kv_->block_table(chunk.seq->kv));
    for (int64_t pos = chunk.start; pos < chunk.start + chunk.count; ++pos) {
      batch.tokens.push_back(chunk.seq->token_at(pos));
      batch.positions.push_back(static_cast<int32_t>(pos));
      batch.attention.token_seq.push_back(static_cast<int32_t>(c));
      batch.attention.kv_len.push_back(static_cast<int32_t>(pos + 1));
      batch.attention.slots.push_back(kv_->slot(chunk.seq->kv, pos));
    }
    if (chunk.wants_logits) batch.logit_rows.push_back(static_cast<int32_t>(batch.tokens.size() - 1));
  }
  return batch;
}

// Appends a sampled token and finishes the sequence when it hits EOS, a stop token,
// max_new_tokens or max_seq_len. Returns true when the sequence finished.
bool Engine::append_token(Sequence& seq, int32_t token) {
  seq.output.push_back(token);
  seq.stats.output_tokens = static_cast<int64_t>(seq.output.size());
  if (seq.output.size() == 1)
    seq.stats.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - seq.arrival_time).count();
  output_for(seq).new_tokens.push_back(token);
  if (plugins_) {  // hook order: on_accept, then on_pages_full (before a finish frees the pages)
    plugins_->committed(seq, {token});
    plugins_->offer_full_pages(seq);
  }
  const auto& stops = seq.params.stop_token_ids;
  const bool is_eos = !seq.params.ignore_eos &&
                      std::find(options_.eos_ids.begin(), options_.eos_ids.end(), token) != options_.eos_ids.end();
  if (is_eos || std::find(stops.begin(), stops.end(), token) != stops.end()) {
    finish(seq, FinishReason::Stop);
  } else if (static_cast<int64_t>(seq.output.size()) >= seq.params.max_new_tokens ||
             seq.total_len() >= options_.limits.max_seq_len) {
    finish(seq, FinishReason::Length);
  }
  return seq.finished();
}

void Engine::process_results(const SchedulerOutput& scheduled, const Tensor& logits) {
  const int64_t vocab = executor_->vocab_size();
  int64_t row = 0;
  for (const ScheduledChunk& chunk : scheduled.chunks) {
    Sequence& seq = *chunk.seq;
    seq.num_computed += chunk.count;
    seq.stats.steps++;
    (chunk.count == 1 && chunk.start >= static_cast<int64_t>(seq.prompt.size()) ? metrics_.decode_tokens
                                                                                 : metrics_.prefill_tokens) += chunk.count;
    if (!chunk.wants_logits) {  // a prefill chunk: pages it filled go to the cache managers now
      if (plugins_) plugins_->offer_full_pages(seq);
      continue;
    }
    const float* row_logits = logits.as<float>() + row++ * vocab;
    append_token(seq, sample_token(row_logits, vocab, seq.params, seq.seed, seq.output.size()));
  }
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
    fail("scoring {} tokens needs {} KV pages, only {} are free", len, kv_->pages_for_tokens(len), kv_->num_free_pages());
  Tensor logits = Tensor::zeros({len, vocab});
  probe.kv = kv_->create_sequence();
  for (int64_t start = 0; start < len; start += options_.limits.max_num_tokens) {
    const int64_t count = std::min(options_.limits.max_num_tokens, len - start);
    DRIFT_CHECK(kv_->append(probe.kv, count), "pages vanished while scoring");
    SchedulerOutput chunk;
    chunk.chunks.push_back({&probe, start, count, false});
    ForwardBatch batch = build_batch(chunk);
    for (int64_t i = 0; i < count; ++i) batch.logit_rows.push_back(static_cast<int32_t>(i));
    Tensor part = executor_->forward(batch);
    if (plugins_) plugins_->forget_forward();
    std::copy(part.as<float>(), part.as<float>() + part.numel(), logits.as<float>() + start * vocab);
  }
  kv_->free(probe.kv);
  return logits;
}

// Sequences whose chunk this step is one decode token (the draft provider's candidates).
std::vector<Sequence*> Engine::decoding_sequences(const SchedulerOutput& scheduled) {
  std::vector<Sequence*> decoding;
  for (const ScheduledChunk& c : scheduled.chunks)
    if (c.count == 1 && c.wants_logits && !c.seq->output.empty()) decoding.push_back(c.seq);
  return decoding;
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

std::vector<RequestOutput> Engine::step() {
  if (plugins_) plugins_->begin_step();
  SchedulerOutput scheduled = schedule_step();
  for (Sequence* seq : scheduled.rejected)
    finish(*seq, FinishReason::Error, fmt::format("request {}: can never fit in the KV cache", seq->id));
  metrics_.preemptions += static_cast<int64_t>(scheduled.preempted.size());
  for (const Sequence* seq : scheduled.preempted) metrics_.decode_preemptions += seq->output.empty() ? 0 : 1;
  if (!scheduled.chunks.empty()) {
    if (plugins_) plugins_->before_forward(metrics_.steps, decoding_sequences(scheduled));
    const auto start = Clock::now();
    Tensor logits = executor_->forward(build_batch(scheduled));
    metrics_.forward_seconds += std::chrono::duration<double>(Clock::now() - start).count();
    if (plugins_) plugins_->after_forward(scheduled);
    metrics_.steps++;
    process_results(scheduled, logits);
  }
  if (options_.check_kv_integrity) kv_->check_integrity();
  std::vector<RequestOutput> outputs;
  for (auto& [id, out] : pending_) outputs.push_back(std::move(out));
  pending_.clear();
  return outputs;
}

}  // namespace drift
