// What structured output costs on the host: token masks for the example JSON schema
// (configs/schemas/person.json) over SmolLM2's 49K vocabulary, along random outputs the grammar
// allows (each token drawn uniformly from the mask). Cold: a fresh constraint, every state's
// mask computed (the first request with a new schema); warm: the same outputs again, every mask
// cached. Run: build/tests/bench/drift_bench_grammar_mask (DRIFT_TEST_DATA overrides the data
// folder). Reports masks per second and the mean time per mask.
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include <benchmark/benchmark.h>

#include "core/grammar/constraint_registry.h"
#include "core/tokenizer/tokenizer.h"

namespace drift::grammar {
namespace {

std::string data_dir() {
  const char* env = std::getenv("DRIFT_TEST_DATA");
  return env && *env ? env : DRIFT_DEFAULT_TEST_DATA;
}

const Tokenizer& smollm2() {
  static const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(data_dir() + "/models/smollm2-135m-instruct");
  return *tokenizer;
}

std::shared_ptr<const StructuredOutput> person_schema() {
  std::ifstream in(std::string(DRIFT_SOURCE_DIR) + "/configs/schemas/person.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return make_structured_output(StructuredKind::JsonSchema, text);
}

constexpr int32_t kEnd = 2;  // SmolLM2's <|im_end|>

// Walks `outputs` random outputs (at most 200 tokens each) through the constraint; returns the
// masks asked for.
int64_t walk(TokenConstraint& constraint, int outputs, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t masks = 0;
  for (int o = 0; o < outputs; ++o) {
    StateId state = constraint.start();
    for (int t = 0; t < 200 && !constraint.must_end(state); ++t) {
      const auto mask = constraint.mask(state);
      ++masks;
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < static_cast<int32_t>(mask->words.size() * 32); ++id)
        if (mask->allows(id) && id != kEnd) allowed.push_back(id);
      if (allowed.empty()) break;
      state = constraint.advance(state, allowed[rng() % allowed.size()]);
    }
  }
  return masks;
}

void BM_ColdMasks(benchmark::State& state) {
  const auto schema = person_schema();
  int64_t masks = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ConstraintRegistry registry(smollm2(), smollm2().vocab_size(), {kEnd});
    registry.vocabulary();
    auto constraint = registry.constraint(*schema);
    state.ResumeTiming();
    masks += walk(*constraint, 4, 1);
  }
  state.counters["masks/s"] = benchmark::Counter(static_cast<double>(masks), benchmark::Counter::kIsRate);
  state.counters["us/mask"] =
      benchmark::Counter(static_cast<double>(masks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ColdMasks)->Unit(benchmark::kMillisecond);

void BM_WarmMasks(benchmark::State& state) {
  const auto schema = person_schema();
  ConstraintRegistry registry(smollm2(), smollm2().vocab_size(), {kEnd});
  auto constraint = registry.constraint(*schema);
  walk(*constraint, 4, 1);
  int64_t masks = 0;
  for (auto _ : state) masks += walk(*constraint, 4, 1);
  state.counters["masks/s"] = benchmark::Counter(static_cast<double>(masks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WarmMasks)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace drift::grammar

BENCHMARK_MAIN();
