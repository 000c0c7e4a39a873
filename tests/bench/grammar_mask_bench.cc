// What structured output costs on the host: token masks for the example JSON schema
// (configs/schemas/person.json) over SmolLM2's 49K vocabulary and Llama 3's 128K (the GPU
// benchmark's), along random outputs the grammar allows (each token drawn uniformly from the
// mask). Cold: a fresh constraint, every state's mask computed (the first request with a new
// schema); warm: the same outputs again, every mask cached; vocabulary: the byte trie built once
// per engine. Run: build/tests/bench/drift_bench_grammar_mask (DRIFT_TEST_DATA overrides the
// data folder). Reports masks per second and the mean time per mask.
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

struct Vocabulary {
  std::unique_ptr<Tokenizer> tokenizer;
  int32_t end;  // the end-of-sequence id the grammar allows where it may end
};

// 0: SmolLM2 (<|im_end|> = 2); 1: Llama 3 (<|eot_id|> = 128009).
const Vocabulary& vocabulary(int64_t which) {
  static const Vocabulary smollm2{load_tokenizer(data_dir() + "/models/smollm2-135m-instruct"), 2};
  static const Vocabulary llama3{load_tokenizer(data_dir() + "/tokenizers/llama3"), 128009};
  return which == 0 ? smollm2 : llama3;
}

std::shared_ptr<const StructuredOutput> person_schema() {
  std::ifstream in(std::string(DRIFT_SOURCE_DIR) + "/configs/schemas/person.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return make_structured_output(StructuredKind::JsonSchema, text);
}

// Walks `outputs` random outputs (at most 200 tokens each) through the constraint; returns the
// masks asked for.
int64_t walk(TokenConstraint& constraint, int32_t end, int outputs, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t masks = 0;
  for (int o = 0; o < outputs; ++o) {
    StateId state = constraint.start();
    for (int t = 0; t < 200 && !constraint.must_end(state); ++t) {
      const auto mask = constraint.mask(state);
      ++masks;
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < static_cast<int32_t>(mask->words.size() * 32); ++id)
        if (mask->allows(id) && id != end) allowed.push_back(id);
      if (allowed.empty()) break;
      state = constraint.advance(state, allowed[rng() % allowed.size()]);
    }
  }
  return masks;
}

void BM_ColdMasks(benchmark::State& state) {
  const auto schema = person_schema();
  int64_t masks = 0;
  const Vocabulary& v = vocabulary(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    ConstraintRegistry registry(*v.tokenizer, v.tokenizer->vocab_size(), {v.end});
    registry.vocabulary();
    auto constraint = registry.constraint(*schema);
    state.ResumeTiming();
    masks += walk(*constraint, v.end, 4, 1);
  }
  state.counters["masks/s"] = benchmark::Counter(static_cast<double>(masks), benchmark::Counter::kIsRate);
  state.counters["us/mask"] =
      benchmark::Counter(static_cast<double>(masks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ColdMasks)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_WarmMasks(benchmark::State& state) {
  const auto schema = person_schema();
  const Vocabulary& v = vocabulary(state.range(0));
  ConstraintRegistry registry(*v.tokenizer, v.tokenizer->vocab_size(), {v.end});
  auto constraint = registry.constraint(*schema);
  walk(*constraint, v.end, 4, 1);
  int64_t masks = 0;
  for (auto _ : state) masks += walk(*constraint, v.end, 4, 1);
  state.counters["masks/s"] = benchmark::Counter(static_cast<double>(masks), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_WarmMasks)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// The vocabulary's byte trie, built once per engine from the tokenizer.
void BM_Vocabulary(benchmark::State& state) {
  const Vocabulary& v = vocabulary(state.range(0));
  for (auto _ : state) {
    ConstraintRegistry registry(*v.tokenizer, v.tokenizer->vocab_size(), {v.end});
    benchmark::DoNotOptimize(&registry.vocabulary());
  }
}
BENCHMARK(BM_Vocabulary)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace drift::grammar

BENCHMARK_MAIN();
