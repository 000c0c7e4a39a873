#include "server/engine_loop.h"

#include <spdlog/spdlog.h>

#include "server/api_error.h"

namespace drift::server {

EngineLoop::EngineLoop(Engine& engine, int64_t max_requests, ServerMetrics& metrics)
    : engine_(engine), max_requests_(max_requests), metrics_(metrics) {
  publish_snapshot();
}

void EngineLoop::check_capacity(int64_t n) const {
  if (stopped_) throw ApiError(503, "the engine stopped: " + stopped_by_);
  if (shutting_down_) throw ApiError(503, "the server is shutting down and takes no new requests");
  if (unfinished_ + n > max_requests_)
    throw ApiError(429,
                   fmt::format("the server is at its limit of {} unfinished requests (--max-requests); retry later",
                               max_requests_))
        .with_code("rate_limit_exceeded");
}

std::shared_ptr<RequestStream> EngineLoop::submit(std::vector<int32_t> prompt, SamplingParams params, int64_t n) {
  if (n > max_requests_)  // never fits: a 429 would only be retried
    throw bad_request("n", fmt::format("n = {}: more choices than this server's limit of {} unfinished requests "
                                       "(--max-requests)",
                                       n, max_requests_));
  auto stream = std::make_shared<RequestStream>(static_cast<int64_t>(prompt.size()), n);
  {
    std::lock_guard lock(mutex_);
    check_capacity(n);
    unfinished_ += n;
    incoming_.push_back({std::move(prompt), std::move(params), n, stream});
  }
  wake_.notify_one();
  return stream;
}

void EngineLoop::cancel(const std::shared_ptr<RequestStream>& stream) {
  stream->cancel();
  {
    std::lock_guard lock(mutex_);
    poke_ = true;
  }
  wake_.notify_one();
}

// The engine can run no more steps: nothing submitted from now on is taken (the loop is shutting
// down), and whoever serves it hears so once.
void EngineLoop::stop(const std::string& why) {
  spdlog::error("drift serve: the engine stopped: {}", why);
  stopped_by_ = why;
  stopped_ = true;
  begin_shutdown();
  if (on_stopped_) on_stopped_();
}

void EngineLoop::begin_shutdown() {
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
  }
  wake_.notify_one();
}

void EngineLoop::abort_all() {
  {
    std::lock_guard lock(mutex_);
    abort_all_ = true;
  }
  wake_.notify_one();
}

void EngineLoop::run() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return !incoming_.empty() || !active_.empty() || poke_ || abort_all_ || shutting_down_; });
      if (shutting_down_ && incoming_.empty() && active_.empty()) return;
    }
    // The engine isolates request and plugin faults; what still escapes (here or in a step)
    // fails every request in flight, and the server goes on with the next ones.
    try {
      iterate();
    } catch (const std::exception& e) {
      spdlog::error("engine step failed: {}", e.what());
      fail_all(std::string("engine step failed: ") + e.what());
      if (const std::string why = engine_.broken(); !why.empty() && !stopped_) stop(why);
    }
  }
}

// One turn: take submissions and cancels, run a step, hand out its outputs.
void EngineLoop::iterate() {
  std::vector<Submission> incoming;
  bool abort_everything = false;
  {
    std::lock_guard lock(mutex_);
    incoming.swap(incoming_);
    abort_everything = abort_all_;
    abort_all_ = poke_ = false;
  }
  for (Submission& submission : incoming) admit(submission);
  if (abort_everything)
    for (const auto& [id, active] : active_) active.stream->cancel();
  abort_cancelled();
  if (!active_.empty())
    for (const RequestOutput& output : engine_.step()) dispatch(output);
  publish_snapshot();
}

// Requests the engine refuses at once (it checks what parsing cannot: KV capacity) are rejected
// before their client gets any response line; a request's choices are taken or refused together.
void EngineLoop::admit(Submission& submission) {
  std::vector<int64_t> ids;
  try {
    ids = engine_.add_samples(submission.prompt, submission.params, submission.n);
  } catch (const std::exception& e) {  // its HTTP thread is waiting for an answer: give one
    return reject(submission, std::string("the engine could not take the request: ") + e.what());
  }
  if (engine_.request(ids.front()).finished()) {  // the choices are alike: the first's error is theirs
    const std::string error = engine_.request(ids.front()).error;
    for (int64_t id : ids) {
      engine_.abort(id);
      engine_.release(id);
    }
    return reject(submission, error);
  }
  submission.stream->admit();
  for (size_t i = 0; i < ids.size(); ++i)
    active_.emplace(ids[i], Active{submission.stream, static_cast<int64_t>(i), std::nullopt});
}

void EngineLoop::reject(Submission& submission, const std::string& error) {
  // The slots are free before the client hears of the rejection (it may count or resubmit at once).
  unfinished_ -= submission.n;
  submission.stream->reject(error);
}

void EngineLoop::abort_cancelled() {
  for (const auto& [id, active] : active_)
    if (active.stream->cancelled()) engine_.abort(id);  // its pages are freed now; the output says "abort"
}

void EngineLoop::dispatch(const RequestOutput& output) {
  auto it = active_.find(output.id);
  if (it == active_.end()) return;  // rejected at admission: already answered
  Active& active = it->second;
  RequestStream& stream = *active.stream;
  const auto now = Clock::now();
  if (!output.new_tokens.empty()) {
    const auto since = [&](Clock::time_point t) { return std::chrono::duration<double>(now - t).count(); };
    if (active.last_token)
      metrics_.observe_inter_token(since(*active.last_token), static_cast<int64_t>(output.new_tokens.size()));
    else if (!stream.first_token_seen)  // the request's first token, whichever choice has it
      metrics_.observe_first_token(since(stream.arrival));
    stream.first_token_seen = true;
    active.last_token = now;
  }
  StreamEvent event{active.index,    output.new_tokens,    output.text,  output.logprobs,
                    output.finished, output.finish_reason, output.error, 0};
  if (output.finished) {
    const Sequence& seq = engine_.request(output.id);
    event.output_tokens = static_cast<int64_t>(seq.output.size());
    metrics_.count_finished(output.finish_reason, static_cast<int64_t>(seq.prompt.size()), event.output_tokens,
                            std::chrono::duration<double>(now - stream.arrival).count());
  }
  stream.push(std::move(event));
  if (output.finished) {
    engine_.release(output.id);
    active_.erase(it);
    unfinished_--;
  }
}

void EngineLoop::fail_all(const std::string& error) {
  const auto now = Clock::now();
  for (auto& [id, active] : active_) {
    const std::shared_ptr<RequestStream>& stream = active.stream;
    int64_t prompt_tokens = stream->prompt_tokens(), output_tokens = 0;
    try {  // the engine may be what failed: nothing it does here may stop the others' answers
      engine_.abort(id);
      output_tokens = static_cast<int64_t>(engine_.request(id).output.size());
      engine_.release(id);
    } catch (const std::exception& e) {
      spdlog::error("aborting request {} after the failure: {}", id, e.what());
    }
    metrics_.count_finished(FinishReason::Error, prompt_tokens, output_tokens,
                            std::chrono::duration<double>(now - stream->arrival).count());
    StreamEvent event;
    event.index = active.index;
    event.finished = true;
    event.finish_reason = FinishReason::Error;
    event.error = error;
    event.output_tokens = output_tokens;
    stream->push(std::move(event));
    unfinished_--;
  }
  active_.clear();
  try {  // the aborts' outputs: nothing is waiting for them any more
    engine_.step();
    publish_snapshot();
  } catch (const std::exception&) {
  }
}

void EngineLoop::publish_snapshot() {
  const EngineMetrics& m = engine_.metrics();
  EngineSnapshot s;
  s.running = static_cast<int64_t>(engine_.scheduler().running().size());
  s.waiting = static_cast<int64_t>(engine_.scheduler().waiting().size());
  s.kv_pages_total = engine_.kv().num_pages();
  s.kv_pages_free = engine_.kv().num_free_pages();
  s.engine_steps = m.steps;
  s.prefill_tokens = m.prefill_tokens;
  s.preemptions = m.preemptions;
  s.speculation = m.speculation;
  s.draft_budgets = m.draft_budgets;
  s.prefix_cache = m.prefix_cache;
  metrics_.set_engine(s);
}

}  // namespace drift::server
