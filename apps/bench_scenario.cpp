#include "apps/bench_scenario.h"

#include "core/error.h"

namespace drift::app {

Scenario make_scenario(const std::string& name, const std::vector<std::vector<int32_t>>& prompt_set,
                       int64_t max_new_tokens) {
  int64_t sequences = 0, context = 0;
  if (name == "single-16k" || name == "single-32k" || name == "single-64k") {
    sequences = 1;
    context = name == "single-16k" ? 16384 : name == "single-32k" ? 32768 : 65536;
  } else if (name == "batch4-16k") {
    sequences = 4;
    context = 16384;
  } else {
    fail("--scenario {}: unknown (known: single-16k, single-32k, single-64k, batch4-16k)", name);
  }
  if (max_new_tokens >= context)
    fail("--scenario {}: --max-new-tokens {} leaves no room for a prompt in a {}-token context", name, max_new_tokens,
         context);
  std::vector<int32_t> pool;
  for (const auto& p : prompt_set) pool.insert(pool.end(), p.begin(), p.end());
  if (pool.empty()) fail("--scenario {}: the prompt set has no tokens to build prompts from", name);
  Scenario s;
  s.concurrency = sequences;
  const int64_t length = context - max_new_tokens;
  for (int64_t i = 0; i < sequences; ++i) {
    std::vector<int32_t>& prompt = s.prompts.emplace_back();
    const auto start = static_cast<size_t>(i * 997);  // a different text for each sequence
    for (int64_t t = 0; t < length; ++t) prompt.push_back(pool[(start + static_cast<size_t>(t)) % pool.size()]);
  }
  return s;
}

}  // namespace drift::app
