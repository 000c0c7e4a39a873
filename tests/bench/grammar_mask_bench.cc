// What structured output costs on the host: token masks for the example JSON schema
// (configs/schemas/person.json) over SmolLM2's 49K vocabulary and Llama 3's 128K (the GPU
// benchmark's), along random outputs the grammar allows (each token drawn uniformly from the
// mask). Cold: a fresh constraint, every state's mask computed (the first request with a new
// schema); warm: the same outputs again, every mask cached; vocabulary: the byte trie built once
// per engine; device steps: an engine's decode steps against a simulated device forward, with and
// without mask workers. Run: build/tests/bench/drift_bench_grammar_mask (DRIFT_TEST_DATA overrides
// the data folder). Reports masks per second and the mean time per mask.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>

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

// An engine's decode steps against a simulated device: `batch` requests with person.json over
// Llama 3's vocabulary start cold; each step the masks are made as Engine::add_masks makes them
// (what no worker started, then the workers' ones) while a device forward of 5 ms runs, and a
// committed token queues the request's next mask as Engine::commit does. Reports the host mask
// time per step and what of it the forward does not hide (exposed), with 0 or N mask workers,
// exploring the grammar's likeliest states from its compilation on or not (the steps start at
// once: no prefill gives the workers a head start). Args: batch, workers, explored masks.
void BM_DeviceSteps(benchmark::State& state) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kDevice = std::chrono::microseconds(5000);
  constexpr int kSteps = 128;
  const auto schema = person_schema();
  const Vocabulary& v = vocabulary(1);
  const auto batch = static_cast<size_t>(state.range(0));
  double mask_seconds = 0, exposed_seconds = 0;
  int64_t steps = 0;
  for (auto _ : state) {
    state.PauseTiming();
    ConstraintRegistry registry(*v.tokenizer, v.tokenizer->vocab_size(), {v.end}, static_cast<int>(state.range(1)),
                                static_cast<int>(state.range(2)));
    registry.vocabulary();
    auto constraint = registry.constraint(*schema);
    std::vector<StateId> states(batch, constraint->start());
    std::mt19937 rng(3);
    state.ResumeTiming();
    for (int step = 0; step < kSteps; ++step, ++steps) {
      const auto launch = Clock::now();
      for (StateId s : states) constraint->prepare(s);
      std::vector<std::shared_ptr<const TokenMask>> masks;
      for (StateId s : states) {
        masks.push_back(constraint->mask(s));
        registry.workers().compute_ahead(constraint, constraint->claim_successors(s));
      }
      const auto made = Clock::now() - launch;
      mask_seconds += std::chrono::duration<double>(made).count();
      exposed_seconds += std::chrono::duration<double>(std::max<Clock::duration>(made - kDevice, {})).count();
      std::this_thread::sleep_until(launch + kDevice);
      for (size_t r = 0; r < batch; ++r) {  // the device's pick: a random allowed token
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(masks[r]->words.size() * 32); ++id)
          if (masks[r]->allows(id) && id != v.end) allowed.push_back(id);
        // A request whose grammar is done ends; a new one takes its slot.
        states[r] =
            allowed.empty() ? constraint->start() : constraint->advance(states[r], allowed[rng() % allowed.size()]);
        if (!constraint->has_mask(states[r])) registry.workers().compute_now(constraint, std::span(&states[r], 1));
      }
    }
  }
  state.counters["mask_ms/step"] = 1e3 * mask_seconds / static_cast<double>(steps);
  state.counters["exposed_ms/step"] = 1e3 * exposed_seconds / static_cast<double>(steps);
  state.counters["exposed%"] = 100 * exposed_seconds / (static_cast<double>(steps) * 5e-3);
}
BENCHMARK(BM_DeviceSteps)
    ->Args({1, 0, 0})
    ->Args({1, 1, 0})
    ->Args({1, 1, -1})
    ->Args({32, 0, 0})
    ->Args({32, 1, 0})
    ->Args({32, 1, -1})
    ->Args({32, 7, 0})
    ->Args({32, 7, -1})
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);

// What exploring a new grammar buys: one worker explores person.json over Llama 3's vocabulary
// up to `explored masks` states (MaskExploration: likeliest first), then 40 random outputs walk
// it as a batch would; reports the exploration's time and the share of the walks' masks that
// were cached when asked for (0 explored: only what earlier walks computed). Arg: explored masks.
void BM_Exploration(benchmark::State& state) {
  const auto schema = person_schema();
  const Vocabulary& v = vocabulary(1);
  for (auto _ : state) {
    ConstraintRegistry registry(*v.tokenizer, v.tokenizer->vocab_size(), {v.end}, 1, static_cast<int>(state.range(0)));
    registry.vocabulary();
    const auto start = std::chrono::steady_clock::now();
    auto constraint = registry.constraint(*schema);
    registry.workers().wait_idle();
    state.counters["explore_ms"] =
        1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.counters["explored"] = static_cast<double>(constraint->cached_masks());
    std::mt19937 rng(7);
    int64_t cached = 0, asked = 0;
    for (int output = 0; output < 40; ++output) {
      StateId s = constraint->start();
      for (int t = 0; t < 200; ++t, ++asked) {
        cached += constraint->has_mask(s) ? 1 : 0;
        const auto mask = constraint->mask(s);
        std::vector<int32_t> allowed;
        for (int32_t id = 0; id < static_cast<int32_t>(mask->words.size() * 32); ++id)
          if (mask->allows(id) && id != v.end) allowed.push_back(id);
        if (allowed.empty()) break;
        s = constraint->advance(s, allowed[rng() % allowed.size()]);
      }
    }
    state.counters["cached%"] = 100.0 * static_cast<double>(cached) / static_cast<double>(asked);
  }
}
BENCHMARK(BM_Exploration)->Arg(0)->Arg(256)->Arg(1024)->Iterations(1)->Unit(benchmark::kMillisecond);

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
