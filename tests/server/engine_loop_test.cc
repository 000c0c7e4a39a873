// The engine thread behind drift serve: requests submitted from many threads share the engine's
// batches and come out exactly as the offline engine makes them (speculating or not); a cancelled
// request is aborted and its pages come back; the bound on unfinished requests and shutdown refuse
// with 429 and 503; logprobs under speculation equal the teacher-forced scores.
#include <gtest/gtest.h>

#include <signal.h>

#include <cmath>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "core/config.h"
#include "core/engine.h"
#include "core/parallel/tensor_parallel_executor.h"
#include "server/api_error.h"
#include "server/engine_loop.h"
#include "support/test_data.h"

namespace drift::server {
namespace {

EngineConfig stories_ngram_config() {
  const std::string model = test::test_data_path("models/stories260K");
  if (model.empty()) return {};
  return parse_config(fmt::format(R"(schema_version = 1
[model]
path = "{}"
[engine]
max_batch_size = 16
max_seq_len = 256
check_kv_integrity = true
[kv_cache]
memory_mb = 4
[speculative]
enabled = true
draft_provider = "ngram"
max_draft_tokens = 4
# Fixed drafts: these tests need verify rows. Adaptive speculation (the default) drafts only where
# its measured step times say it pays, and under AddressSanitizer they said never.
adaptive = false
[[plugins]]
name = "ngram"
[plugins.ngram]
min_ngram = 1
)",
                                  model),
                      "engine_loop_test", "");
}

std::vector<std::vector<int32_t>> prompts(const Engine& engine) {
  std::vector<std::vector<int32_t>> out;
  for (const char* text : {"Once upon a time", "The little dog", "Lily went to the park", "Tom had a red ball",
                           "One day, a cat", "There was a big tree"})
    out.push_back(engine.tokenizer()->encode_prompt(text));
  return out;
}

SamplingParams params(int64_t max_new_tokens, bool speculate) {
  SamplingParams p;
  p.max_new_tokens = max_new_tokens;
  p.speculative = speculate ? "" : "off";
  return p;
}

// The offline engine's outputs for the same requests, one at a time.
std::vector<int32_t> offline(const EngineConfig& config, const std::vector<int32_t>& prompt, const SamplingParams& p) {
  auto engine = Engine::from_config(config);
  const int64_t id = engine->add_request(prompt, p);
  while (engine->has_unfinished()) engine->step();
  return engine->request(id).output;
}

struct Served {
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;
  FinishReason reason = FinishReason::None;
};

Served consume(const std::shared_ptr<RequestStream>& stream) {
  EXPECT_EQ(stream->wait_admission(nullptr), RequestStream::Admission::Admitted);
  const StreamEvent all = stream->collect().at(0);
  EXPECT_EQ(static_cast<int64_t>(all.tokens.size()), all.output_tokens);
  return {all.tokens, all.logprobs, all.finish_reason};
}

class EngineLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = stories_ngram_config();
    ASSERT_FALSE(config_.model.path.empty()) << "test data missing";
    engine_ = Engine::from_config(config_);
  }
  void start(int64_t max_requests) {
    loop_ = std::make_unique<EngineLoop>(*engine_, max_requests, metrics_);
    thread_ = std::thread([this] { loop_->run(); });
  }
  void TearDown() override {
    if (!loop_) return;
    loop_->begin_shutdown();
    thread_.join();
    EXPECT_EQ(engine_->kv().num_free_pages(), engine_->kv().num_pages()) << "pages leaked";
  }
  EngineConfig config_;
  std::unique_ptr<Engine> engine_;
  ServerMetrics metrics_;
  std::unique_ptr<EngineLoop> loop_;
  std::thread thread_;
};

TEST_F(EngineLoopTest, ConcurrentSubmissionsEqualTheOfflineEngine) {
  start(64);
  const auto all = prompts(*engine_);
  std::vector<std::future<Served>> futures;
  std::vector<std::pair<size_t, SamplingParams>> asked;
  for (size_t i = 0; i < 24; ++i) {
    const SamplingParams p = params(8 + 12 * static_cast<int64_t>(i % 4), i % 2 == 0);
    asked.emplace_back(i % all.size(), p);
    futures.push_back(
        std::async(std::launch::async, [&, i, p] { return consume(loop_->submit(all[i % all.size()], p)); }));
  }
  for (size_t i = 0; i < futures.size(); ++i)
    EXPECT_EQ(futures[i].get().tokens, offline(config_, all[asked[i].first], asked[i].second)) << "request " << i;
  EXPECT_GT(engine_->metrics().speculation.draft_tokens, 0);
  EXPECT_EQ(metrics_.engine().running, 0);
}

TEST_F(EngineLoopTest, CancelledRequestsAreAbortedAndTheirPagesFreed) {
  start(8);
  SamplingParams p = params(200, false);
  p.ignore_eos = true;
  auto stream = loop_->submit(prompts(*engine_)[0], p);
  ASSERT_EQ(stream->wait_admission(nullptr), RequestStream::Admission::Admitted);
  ASSERT_TRUE(stream->next(std::chrono::milliseconds(10000)));  // it is generating
  loop_->cancel(stream);
  const StreamEvent rest = stream->collect().at(0);
  EXPECT_EQ(rest.finish_reason, FinishReason::Abort);
  EXPECT_LT(rest.output_tokens, 200);
  // The loop may publish its snapshot a moment after the event: wait for it.
  for (int i = 0; i < 200 && loop_->unfinished() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(loop_->unfinished(), 0);
}

TEST_F(EngineLoopTest, ChoicesAreTheSeededRequestsAloneAndCountAgainstTheBound) {
  start(4);
  SamplingParams p = params(24, false);
  p.temperature = 0.8;
  p.seed = 31;
  const std::vector<int32_t> prompt = prompts(*engine_)[2];
  auto stream = loop_->submit(prompt, p, 3);
  ASSERT_EQ(stream->wait_admission(nullptr), RequestStream::Admission::Admitted);
  try {
    loop_->submit(prompt, p, 2);  // 3 + 2 choices > 4
    ADD_FAILURE() << "choices beyond the bound were taken";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 429);
  }
  try {
    loop_->submit(prompt, p, 5);  // more than the bound itself: never fits, so no 429 to retry
    ADD_FAILURE() << "choices beyond the bound were taken";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.param, "n");
  }
  const std::vector<StreamEvent> choices = stream->collect();
  ASSERT_EQ(choices.size(), 3u);
  for (size_t i = 0; i < choices.size(); ++i) {
    SamplingParams alone = p;
    alone.seed = 31 + i;
    EXPECT_EQ(choices[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(choices[i].tokens, offline(config_, prompt, alone)) << "choice " << i;
    EXPECT_EQ(static_cast<int64_t>(choices[i].tokens.size()), choices[i].output_tokens);
  }
  // Latency: one time to first token for the request, and each choice's own gaps after its first
  // token (not the gaps between different choices' tokens of one step).
  int64_t gaps = 0;
  for (const StreamEvent& choice : choices) gaps += static_cast<int64_t>(choice.tokens.size()) - 1;
  const std::string text = metrics_.render();
  EXPECT_NE(text.find("drift_time_to_first_token_seconds_count 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("drift_inter_token_latency_seconds_count " + std::to_string(gaps) + "\n"), std::string::npos)
      << text;
}

TEST_F(EngineLoopTest, CancellingAStreamAbortsEveryChoice) {
  start(8);
  SamplingParams p = params(200, false);
  p.ignore_eos = true;
  p.temperature = 1.0;
  auto stream = loop_->submit(prompts(*engine_)[0], p, 3);
  ASSERT_EQ(stream->wait_admission(nullptr), RequestStream::Admission::Admitted);
  ASSERT_TRUE(stream->next(std::chrono::milliseconds(10000)));  // it is generating
  loop_->cancel(stream);
  // The event taken above may have been a choice's only one: collect what is left per choice.
  int64_t aborted = 0;
  while (auto event = stream->next(std::chrono::milliseconds(10000)))
    if (event->finished && event->finish_reason == FinishReason::Abort && ++aborted == 3) break;
  EXPECT_EQ(aborted, 3);
  for (int i = 0; i < 200 && loop_->unfinished() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(loop_->unfinished(), 0);
}

TEST_F(EngineLoopTest, TheBoundAnswers429AndShutdownAnswers503) {
  start(2);
  SamplingParams p = params(200, false);
  p.ignore_eos = true;
  auto a = loop_->submit(prompts(*engine_)[0], p);
  auto b = loop_->submit(prompts(*engine_)[1], p);
  try {
    loop_->submit(prompts(*engine_)[2], p);
    ADD_FAILURE() << "a third request was taken";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 429);
  }
  loop_->begin_shutdown();
  try {
    loop_->submit(prompts(*engine_)[2], p);
    ADD_FAILURE() << "a request was taken while shutting down";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 503);
  }
  // Unfinished requests still finish after shutdown began.
  EXPECT_EQ(consume(a).tokens.size(), 200u);
  EXPECT_EQ(consume(b).reason, FinishReason::Length);
}

TEST_F(EngineLoopTest, RequestsTheEngineRefusesAreRejectedBeforeAnyOutput) {
  start(8);
  SamplingParams p = params(8, true);
  p.speculative = "no_such_provider";  // the server's parser refuses this first; the engine too
  auto stream = loop_->submit(prompts(*engine_)[0], p);
  std::string error;
  EXPECT_EQ(stream->wait_admission(&error), RequestStream::Admission::Rejected);
  EXPECT_NE(error.find("no_such_provider"), std::string::npos) << error;
  EXPECT_EQ(loop_->unfinished(), 0);
}

// logprobs: with speculation (verify rows) and without, each committed token's logprob equals the
// log-softmax of the teacher-forced logits at its position, and the top list is sorted and holds it.
TEST_F(EngineLoopTest, LogprobsEqualTeacherForcedScoresWithAndWithoutSpeculation) {
  start(8);
  const std::vector<int32_t> prompt = prompts(*engine_)[0];
  for (bool speculate : {true, false}) {
    SamplingParams p = params(160, speculate);
    p.logprobs = 3;
    const Served served = consume(loop_->submit(prompt, p));
    ASSERT_EQ(served.logprobs.size(), served.tokens.size());
    loop_->begin_shutdown();
    thread_.join();
    std::vector<int32_t> ids = prompt;
    ids.insert(ids.end(), served.tokens.begin(), served.tokens.end());
    const Tensor logits = engine_->score(ids);
    const int64_t vocab = logits.dim(1);
    for (size_t i = 0; i < served.tokens.size(); ++i) {
      const float* row = logits.as<float>() + (prompt.size() - 1 + i) * vocab;
      double z = 0;
      for (int64_t v = 0; v < vocab; ++v) z += std::exp(static_cast<double>(row[v]));
      const double expected = row[served.tokens[i]] - std::log(z);
      const TokenLogprobs& lp = served.logprobs[i];
      EXPECT_EQ(lp.chosen.token, served.tokens[i]);
      EXPECT_NEAR(lp.chosen.logprob, expected, 1e-4) << "token " << i << (speculate ? " (speculating)" : "");
      ASSERT_EQ(lp.top.size(), 3u);
      EXPECT_EQ(lp.top[0].token, served.tokens[i]);  // greedy
      EXPECT_GE(lp.top[0].logprob, lp.top[1].logprob);
      EXPECT_GE(lp.top[1].logprob, lp.top[2].logprob);
    }
    if (speculate) {
      EXPECT_GT(engine_->metrics().speculation.accepted_tokens, 0);
    }
    start(8);
  }
}

}  // namespace
}  // namespace drift::server

namespace drift::server {
namespace {

// A tensor-parallel engine whose rank dies mid-request: the request fails naming the rank, the
// loop stops (the server's supervisor hears it once), and everything after is refused with 503
// naming the cause, never failed one by one on a dead engine.
TEST(EngineLoopTensorParallel, ARankThatDiesStopsTheLoopWithItsCause) {
  EngineConfig config = stories_ngram_config();
  ASSERT_FALSE(config.model.path.empty());
  config.engine.tensor_parallel_size = 2;
  config.engine.num_threads = 1;
  config.tensor_parallel.rank_executable = test::drift_exe();
  auto engine = Engine::from_config(config);
  auto& executor = dynamic_cast<TensorParallelExecutor&>(engine->executor());
  ServerMetrics metrics;
  EngineLoop loop(*engine, 8, metrics);
  std::promise<void> stopped;
  loop.set_on_stopped([&] { stopped.set_value(); });
  std::thread thread([&] { loop.run(); });
  SamplingParams p = params(400, false);
  p.ignore_eos = true;
  auto stream = loop.submit(prompts(*engine)[0], p);
  ASSERT_EQ(stream->wait_admission(nullptr), RequestStream::Admission::Admitted);
  ASSERT_EQ(kill(executor.rank_pid(1), SIGKILL), 0);
  const StreamEvent all = stream->collect().at(0);
  EXPECT_EQ(all.finish_reason, FinishReason::Error);
  EXPECT_NE(all.error.find("tensor parallel rank 1"), std::string::npos) << all.error;
  EXPECT_EQ(stopped.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_NE(loop.stopped_by().find("tensor parallel rank 1"), std::string::npos) << loop.stopped_by();
  try {
    loop.submit(prompts(*engine)[1], p);
    ADD_FAILURE() << "a request was taken by a stopped engine";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 503);
    EXPECT_NE(std::string(e.what()).find("the engine stopped: tensor parallel rank 1"), std::string::npos) << e.what();
  }
  thread.join();  // run() returns: the loop is shut down
}

}  // namespace
}  // namespace drift::server
