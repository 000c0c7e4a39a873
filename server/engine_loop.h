#pragma once
// EngineLoop: the one thread that owns the Engine. HTTP threads submit requests (each gets a
// RequestStream) and cancel them; the loop adds them to the engine between steps, so every
// client shares continuous batching, and hands each step's output to its stream. The number of
// unfinished requests is bounded: beyond it submit() refuses (429), and once shutdown begins it
// refuses everything (503).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/engine.h"
#include "server/request_stream.h"
#include "server/server_metrics.h"

namespace drift::server {

class EngineLoop {
 public:
  EngineLoop(Engine& engine, int64_t max_requests, ServerMetrics& metrics);

  // HTTP threads. submit() throws ApiError 429 (full) or 503 (shutting down).
  // `n` choices: parallel samples of the prompt, each an engine request (and each counts
  // against the limit), all reporting to the one stream.
  std::shared_ptr<RequestStream> submit(std::vector<int32_t> prompt, SamplingParams params, int64_t n = 1);
  void cancel(const std::shared_ptr<RequestStream>& stream);
  // The same refusals as submit(), checked before a request is parsed (parsing a large body or
  // rendering a chat template is the costly part of a refused request).
  void check_capacity(int64_t n = 1) const;

  // The engine thread's body: returns once shutdown began and no request is left.
  void run();
  // Stop taking requests; run() returns when the unfinished ones are done.
  void begin_shutdown();
  // Abort every unfinished request (their streams finish with finish_reason "abort").
  void abort_all();
  bool shutting_down() const { return shutting_down_; }
  // Once a step failed in a way the engine cannot recover from (Engine::broken: a tensor-parallel
  // rank died), the loop fails what is in flight, refuses everything after (503 naming the cause)
  // and shuts down; `on_stopped` (set before run()) is told, once. "" while the engine runs.
  std::string stopped_by() const { return stopped_ ? stopped_by_ : std::string(); }
  void set_on_stopped(std::function<void()> on_stopped) { on_stopped_ = std::move(on_stopped); }
  int64_t unfinished() const { return unfinished_; }

 private:
  struct Submission {
    std::vector<int32_t> prompt;
    SamplingParams params;
    int64_t n = 1;
    std::shared_ptr<RequestStream> stream;
  };
  // An engine request in flight: the stream it reports to, as which choice.
  struct Active {  // one choice of a stream
    std::shared_ptr<RequestStream> stream;
    int64_t index = 0;
    // This choice's previous tokens: the gap to its next ones is an inter-token latency (the
    // choices of an n > 1 request each have their own).
    std::optional<Clock::time_point> last_token;
  };
  void admit(Submission& submission);
  void reject(Submission& submission, const std::string& error);
  void abort_cancelled();
  void dispatch(const RequestOutput& output);
  void iterate();
  void fail_all(const std::string& error);
  void stop(const std::string& why);
  void publish_snapshot();

  Engine& engine_;
  const int64_t max_requests_;
  ServerMetrics& metrics_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Submission> incoming_;
  bool abort_all_ = false;
  bool poke_ = false;  // a cancel arrived
  std::atomic<bool> shutting_down_{false};
  std::atomic<int64_t> unfinished_{0};  // submitted and not yet finished
  std::string stopped_by_;              // written once, before stopped_ is set
  std::atomic<bool> stopped_{false};
  std::function<void()> on_stopped_;

  std::map<int64_t, Active> active_;  // by engine request id; engine thread only
};

}  // namespace drift::server
