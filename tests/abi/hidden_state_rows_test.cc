// Hidden states after a verify step: what a draft provider reads in on_propose (EAGLE-3 reads
// the target's hidden states) are the rows of the sequence's last computed positions in position
// order -- the root and the ACCEPTED nodes, moved behind the root as their KV was -- exactly as
// after a plain decode step. The oracle checks this before each proposal (check_hidden_rows; the
// fake executor's "hidden state" is the token id) and fails the sequence on a mismatch, so a
// [fallback] line would expose a wrong row.
#include <gtest/gtest.h>

#include "abi_test_util.h"
#include "core/engine.h"
#include "support/fake_executor.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

constexpr int64_t kVocab = 64;

TEST(HiddenStateRows, AfterAVerifyStepTheyAreTheCommittedPositions) {
  test::LogCapture log;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<test::RunResult> reference;
  for (int32_t i = 0; i < 6; ++i) {
    prompts.push_back({i, 5, 9, static_cast<int32_t>(3 * i % kVocab), 11});
    reference.emplace_back().output = test::FakeExecutor::reference_continuation(prompts.back(), 30, kVocab);
  }
  const std::string file = test::write_reference(test::make_temp_dir("rows"), prompts, reference);
  EngineOptions o;
  o.num_pages = 128;
  o.block_size = 4;
  o.check_kv_integrity = true;
  o.speculation.max_draft_tokens = 12;
  Engine engine(o, std::make_unique<test::FakeExecutor>(kVocab, 128, 4));
  EngineConfig c;
  // Wide trees whose true child is often not the first: accepted nodes are not a prefix.
  PluginEntry oracle = test::oracle_entry("oracle", file, {0.2, 3, 4, 7});
  oracle.settings_toml += "check_hidden_rows = true\n";
  c.plugins = {oracle};
  ModelConfig m;
  m.vocab_size = kVocab;
  m.hidden_size = 1;
  m.num_layers = 1;
  m.num_heads = m.num_kv_heads = 1;
  m.head_dim = 1;
  engine.enable_plugins(test::with_speculation(c, "oracle", 12), m, SpecialTokens{});
  SamplingParams p;
  p.max_new_tokens = 30;
  const auto runs = test::run_batch(engine, prompts, {p});
  EXPECT_TRUE(log.fallbacks().empty()) << ::testing::PrintToString(log.lines());
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].output, reference[i].output);
  EXPECT_GT(engine.metrics().speculation.accepted_tokens, 20);
}

}  // namespace
}  // namespace drift
