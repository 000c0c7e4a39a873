#pragma once
// drift bench --scenario: named long-context workloads (the seeds' benchmark_speculative.py
// scenarios), built from the prompt set's own tokens so they need no extra data:
//   single-32k   one sequence decoding at a 32K context (prompt 32768 - max_new_tokens tokens);
//                single-16k and single-64k likewise at 16K and 64K (SpecPV's long contexts)
//   batch4-16k   four sequences at once, each at a 16K context
#include <cstdint>
#include <string>
#include <vector>

namespace drift::app {

struct Scenario {
  std::vector<std::vector<int32_t>> prompts;
  int64_t concurrency = 1;
};

// The scenario's prompts: each the prompt set's tokens concatenated and cycled, from a different
// starting point per sequence. Throws DriftError for an unknown name or a context that does not
// leave room for max_new_tokens.
Scenario make_scenario(const std::string& name, const std::vector<std::vector<int32_t>>& prompt_set,
                       int64_t max_new_tokens);

}  // namespace drift::app
