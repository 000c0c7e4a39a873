// Request validation: each bad request fails alone with a message naming the field and value,
// while the requests batched with it complete exactly as if it had never been sent.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/engine.h"
#include "support/fake_executor.h"

namespace drift {
namespace {

constexpr int64_t kVocab = 50;

std::unique_ptr<Engine> make_engine(int64_t max_seq_len = 200) {
  EngineOptions o;
  o.num_pages = 32;
  o.block_size = 4;
  o.limits = {8, 32, max_seq_len};
  o.eos_ids = {};
  o.check_kv_integrity = true;
  return std::make_unique<Engine>(o, std::make_unique<test::FakeExecutor>(kVocab, 32, 4));
}

SamplingParams greedy(int64_t n) {
  SamplingParams p;
  p.max_new_tokens = n;
  return p;
}

void run(Engine& e) {
  while (e.has_unfinished()) e.step();
}

struct BadCase {
  const char* name;
  std::vector<int32_t> prompt;
  SamplingParams params;
  const char* expected_message_part;
};

TEST(EngineRequestsTest, EachBadRequestFailsAloneWithAClearMessage) {
  std::vector<BadCase> cases = {
      {"id_too_large", {1, 2, 50}, greedy(3), "token id 50 at index 2 is out of range [0, 50)"},
      {"negative_id", {-1}, greedy(3), "token id -1 at index 0"},
      {"empty_prompt", {}, greedy(3), "prompt is empty"},
      {"prompt_too_long", std::vector<int32_t>(200, 1), greedy(3), "prompt has 200 tokens; max_seq_len is 200"},
      {"negative_temperature", {1}, [] { auto p = greedy(3); p.temperature = -1; return p; }(), "temperature = -1"},
      {"top_p_zero", {1}, [] { auto p = greedy(3); p.top_p = 0; return p; }(), "top_p = 0"},
      {"min_p_above_one", {1}, [] { auto p = greedy(3); p.min_p = 1.5; return p; }(), "min_p = 1.5"},
      {"negative_top_k", {1}, [] { auto p = greedy(3); p.top_k = -2; return p; }(), "top_k = -2"},
      {"zero_new_tokens", {1}, greedy(0), "max_new_tokens = 0"},
      {"never_fits", {1, 2}, greedy(500), "KV pages"},
  };
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.name);
    auto engine = make_engine();
    const int64_t before = engine->add_request({3, 4, 5}, greedy(6));
    const int64_t id = engine->add_request(bad.prompt, bad.params);
    const int64_t after = engine->add_request({7}, greedy(9));
    run(*engine);
    const Sequence& s = engine->request(id);
    EXPECT_EQ(s.finish_reason, FinishReason::Error);
    EXPECT_NE(s.error.find(bad.expected_message_part), std::string::npos) << s.error;
    EXPECT_TRUE(s.output.empty());
    EXPECT_EQ(engine->request(before).output, test::FakeExecutor::reference_continuation({3, 4, 5}, 6, kVocab));
    EXPECT_EQ(engine->request(after).output, test::FakeExecutor::reference_continuation({7}, 9, kVocab));
  }
}

TEST(EngineRequestsTest, StopsAtEosStopTokensMaxNewTokensAndMaxSeqLen) {
  const std::vector<int32_t> prompt = {1, 2, 3};
  const auto ref = test::FakeExecutor::reference_continuation(prompt, 40, kVocab);
  {  // a stop token id ends the request with "stop" at its first occurrence, the stop token included
    auto unrestricted = make_engine();
    const int64_t free_id = unrestricted->add_request(prompt, greedy(40));
    run(*unrestricted);
    const auto& free_run = unrestricted->request(free_id).output;
    ASSERT_EQ(free_run.size(), 40u);
    const int32_t stop = free_run[4];
    const auto first_stop = std::find(free_run.begin(), free_run.end(), stop);
    auto engine = make_engine();
    SamplingParams p = greedy(40);
    p.stop_token_ids = {stop};
    const int64_t id = engine->add_request(prompt, p);
    run(*engine);
    EXPECT_EQ(engine->request(id).finish_reason, FinishReason::Stop);
    EXPECT_EQ(engine->request(id).output, std::vector<int32_t>(free_run.begin(), first_stop + 1));
  }
  {  // max_seq_len cuts the request with "length"
    auto engine = make_engine(10);
    const int64_t id = engine->add_request(prompt, greedy(40));
    run(*engine);
    EXPECT_EQ(engine->request(id).finish_reason, FinishReason::Length);
    EXPECT_EQ(engine->request(id).total_len(), 10);
  }
  {  // EOS from the model config, unless ignore_eos
    EngineOptions o;
    o.num_pages = 32;
    o.block_size = 4;
    o.limits = {8, 32, 64};
    o.eos_ids = {ref[2]};
    Engine engine(o, std::make_unique<test::FakeExecutor>(kVocab, 32, 4));
    const int64_t stops = engine.add_request(prompt, greedy(40));
    SamplingParams ignore = greedy(8);
    ignore.ignore_eos = true;
    const int64_t goes_on = engine.add_request(prompt, ignore);
    run(engine);
    EXPECT_EQ(engine.request(stops).finish_reason, FinishReason::Stop);
    EXPECT_EQ(engine.request(stops).output.size(), 3u);
    EXPECT_EQ(engine.request(goes_on).output.size(), 8u);
  }
}

}  // namespace
}  // namespace drift
