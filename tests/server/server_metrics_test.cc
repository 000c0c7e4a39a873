// /metrics text: cumulative histogram buckets, counters by label, the engine snapshot's gauges.
// (The end-to-end test parses it with prometheus_client; this checks the numbers.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/server_metrics.h"

namespace drift::server {
namespace {

using ::testing::HasSubstr;

TEST(ServerMetrics, HistogramBucketsAreCumulativeWithSumAndCount) {
  Histogram h({0.1, 1.0});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h.observe(v);
  std::string text;
  h.render(text, "x_seconds", "help");
  EXPECT_THAT(text, HasSubstr("# TYPE x_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("x_seconds_bucket{le=\"0.1\"} 2\n"));  // le is inclusive
  EXPECT_THAT(text, HasSubstr("x_seconds_bucket{le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("x_seconds_bucket{le=\"+Inf\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("x_seconds_sum 3.65\n"));
  EXPECT_THAT(text, HasSubstr("x_seconds_count 4\n"));
}

TEST(ServerMetrics, CountsRequestsTokensAndTheEngineSnapshot) {
  ServerMetrics m;
  m.count_http("/v1/completions", 200);
  m.count_http("/v1/completions", 200);
  m.count_http("/v1/completions", 400);
  m.count_finished(FinishReason::Stop, 5, 7, 0.2);
  m.count_finished(FinishReason::Abort, 3, 1, 0.1);
  m.observe_first_token(0.01);
  m.observe_inter_token(0.04, 4);  // four tokens committed together: four gaps of 0.01
  EngineSnapshot s;
  s.kv_pages_total = 10;
  s.kv_pages_free = 7;
  s.running = 2;
  s.speculation.draft_tokens = 9;
  s.speculation.decode_steps = 4;
  s.speculation.decode_tokens = 10;
  m.set_engine(s);
  const std::string text = m.render();
  EXPECT_THAT(text, HasSubstr("drift_http_requests_total{path=\"/v1/completions\",status=\"200\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("drift_http_requests_total{path=\"/v1/completions\",status=\"400\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drift_requests_finished_total{finish_reason=\"stop\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drift_requests_finished_total{finish_reason=\"abort\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("drift_requests_finished_total{finish_reason=\"length\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("drift_prompt_tokens_total 8\n"));
  EXPECT_THAT(text, HasSubstr("drift_generation_tokens_total 8\n"));
  EXPECT_THAT(text, HasSubstr("drift_inter_token_latency_seconds_count 4\n"));
  EXPECT_THAT(text, HasSubstr("drift_inter_token_latency_seconds_bucket{le=\"0.01\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("drift_e2e_request_latency_seconds_count 2\n"));
  EXPECT_THAT(text, HasSubstr("drift_kv_pages_used 3\n"));
  EXPECT_THAT(text, HasSubstr("drift_requests_running 2\n"));
  EXPECT_THAT(text, HasSubstr("drift_spec_draft_tokens_total 9\n"));
  EXPECT_THAT(text, HasSubstr("drift_spec_acceptance_length 2.5\n"));
}

}  // namespace
}  // namespace drift::server
