// SuffixDecoding's CPU costs (plugins/suffix_cache), per token: updating the trees with a
// committed token and drafting for a request, with 1,000 earlier responses in the global tree
// (ArcticInference reports 12-20 us per speculated token and ~4 us per update).
// Run: build/tests/bench/drift_bench_suffix_tree
// Text: responses and prompts stitched from a shared bank of phrases (vocabulary 32,000), so the
// trees branch and repeat like real text: every phrase recurs, with different neighbours.
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "speculator.h"

namespace {

using Tokens = std::vector<int32_t>;

struct Text {
  std::vector<Tokens> phrases;
  std::mt19937 rng{42};
  Text() {
    std::uniform_int_distribution<int32_t> token(0, 31999);
    for (int i = 0; i < 2000; ++i) {
      Tokens p(std::uniform_int_distribution<int>(4, 24)(rng));
      for (int32_t& t : p) t = token(rng);
      phrases.push_back(std::move(p));
    }
  }
  Tokens make(size_t length) {
    Tokens out;
    std::uniform_int_distribution<size_t> pick(0, phrases.size() - 1);
    while (out.size() < length) {
      const Tokens& p = phrases[pick(rng)];
      out.insert(out.end(), p.begin(), p.end());
    }
    out.resize(length);
    return out;
  }
};

// A speculator holding `cached` finished responses of 256 tokens, and one running request whose
// prompt has `context` tokens.
struct Fixture {
  Text text;
  suffix::Speculator speculator{suffix::Settings{}};
  int64_t next = 0;
  Fixture(int cached, size_t context) {
    for (int i = 0; i < cached; ++i) {
      const Tokens prompt = text.make(64);
      speculator.start(next, prompt, false);
      speculator.accept(next, text.make(256));
      speculator.finish(next++);
    }
    speculator.start(next, text.make(context), false);
  }
};

void BM_Update(benchmark::State& state) {
  Fixture f(1000, static_cast<size_t>(state.range(0)));
  const Tokens more = f.text.make(1 << 16);
  size_t i = 0;
  for (auto _ : state) {
    f.speculator.accept(f.next, std::span(&more[i++ % more.size()], 1));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("per committed token: the request's tree and the global tree");
}
BENCHMARK(BM_Update)->Arg(2048)->Unit(benchmark::kMicrosecond);

void BM_Speculate(benchmark::State& state) {
  Fixture f(1000, static_cast<size_t>(state.range(0)));
  const Tokens more = f.text.make(1 << 16);
  size_t i = 0, drafted = 0;
  for (auto _ : state) {
    state.PauseTiming();  // a new committed token each time: a fresh context to match
    f.speculator.accept(f.next, std::span(&more[i++ % more.size()], 1));
    state.ResumeTiming();
    drafted += f.speculator.propose(f.next, 16).tokens.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["drafted_tokens_per_call"] = static_cast<double>(drafted) / static_cast<double>(state.iterations());
  state.SetLabel("per draft (one call per decode step), budget 16");
}
BENCHMARK(BM_Speculate)->Arg(2048)->Arg(16384)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
