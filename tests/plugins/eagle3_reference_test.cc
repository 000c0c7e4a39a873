// eagle3's draft numerics against the PyTorch reference (../shared/tools/eagle3/eagle3_ref.py, the
// semantics of vLLM's and SGLang's llama_eagle3): tests/data/eagle3/reference_logits.json holds,
// for 4 prompts and their first 8 target forwards, every draft distribution the reference's chain
// of 4 was built from -- the root's and each chain step's logits over the draft vocabulary -- with
// the chain drafted and the tokens committed (tools/eagle3/record_reference.py, fp32 on the CPU).
// The plugin runs the same decoding through the engine (fp32 CPU backend) and shows its logits
// through its inspection extension (keep_logits = true).
#include <cmath>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine.h"
#include "core/plugin/engine_plugins.h"
#include "inspect.h"
#include "support/speculation.h"
#include "support/test_data.h"

namespace drift {
namespace {

nlohmann::json reference() {
  std::ifstream in(test::source_dir() + "/tests/data/eagle3/reference_logits.json");
  return nlohmann::json::parse(in);
}

TEST(Eagle3Reference, DraftLogitsAndChainsEqualEagle3Ref) {
  const nlohmann::json ref = reference();
  const int k = ref.at("k").get<int>();
  EngineConfig c;
  c.model.path = test::test_data_path("models/stories260K");
  c.kv_cache.num_pages = 64;
  PluginEntry e;
  e.name = "eagle3";
  e.settings_toml = fmt::format("checkpoint = {}\ntree = \"chain\"\ndepth = {}\nkeep_logits = true\n",
                                nlohmann::json(test::test_data_path("models/stories260K-eagle3")).dump(), k);
  c.plugins = {e};
  auto engine = Engine::from_config(test::with_speculation(c, "eagle3", k));
  const PluginHost::Extension inspect = engine->plugins()->host().extension("eagle3", EAGLE3_INSPECT_KEY);
  ASSERT_NE(inspect.table, nullptr);
  const auto* api = static_cast<const eagle3_inspect_t*>(inspect.table);

  double worst = 0.0;
  const auto& prompts = ref.at("prompts");
  for (size_t p = 0; p < prompts.size(); ++p) {
    SamplingParams params;
    params.max_new_tokens = 64;
    params.ignore_eos = true;
    const int64_t id = engine->add_request(prompts[p].get<std::vector<int32_t>>(), params);
    const auto& steps = ref.at("runs")[p];
    size_t committed_before = 0;
    // Step 0 prefills and drafts; each later step verifies the last draft and drafts again.
    for (size_t s = 0; s <= steps.size(); ++s) {
      engine->step();
      const Sequence& seq = engine->request(id);
      if (s > 0) {  // the tokens step s committed: what the reference committed at its step s-1
        const std::vector<int32_t> committed(seq.output.begin() + static_cast<int64_t>(committed_before),
                                             seq.output.end());
        EXPECT_EQ(committed, steps[s - 1].at("committed").get<std::vector<int32_t>>())
            << "prompt " << p << " step " << s;
      }
      committed_before = seq.output.size();
      if (s == steps.size()) break;
      const auto& want = steps[s].at("logits");
      int64_t rows = 0, vocab = 0;
      ASSERT_EQ(api->draft_logits(inspect.instance, id, nullptr, 0, &rows, &vocab), DRIFT_OK);
      ASSERT_EQ(rows, static_cast<int64_t>(want.size())) << "the root's distribution and one per chain step";
      std::vector<float> got(static_cast<size_t>(rows * vocab));
      ASSERT_EQ(api->draft_logits(inspect.instance, id, got.data(), static_cast<int64_t>(got.size()), &rows, &vocab),
                DRIFT_OK);
      for (int64_t r = 0; r < rows; ++r) {
        const auto row = want[r].get<std::vector<float>>();
        ASSERT_EQ(static_cast<int64_t>(row.size()), vocab);
        for (int64_t v = 0; v < vocab; ++v) {
          const double diff = std::fabs(double(got[r * vocab + v]) - row[v]);
          worst = std::max(worst, diff);
          ASSERT_LT(diff, 1e-3 * std::max(1.0, std::fabs(double(row[v]))))
              << "prompt " << p << " step " << s << " row " << r << " draft id " << v;
        }
      }
    }
    engine->abort(id);
    engine->step();
    engine->release(id);
  }
  std::printf("[ metric ] eagle3 draft logits vs eagle3_ref.py: max |difference| %.2e over %zu prompts\n", worst,
              prompts.size());
}

}  // namespace
}  // namespace drift
