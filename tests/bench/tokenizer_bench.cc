// Encode/decode throughput of each tokenizer on MT-Bench turns (../shared/datasets/mt_bench.jsonl).
// Run: build/tests/bench/drift_bench_tokenizer  (DRIFT_TEST_DATA overrides the data folder).
// Reports bytes_per_second of UTF-8 text; Google Benchmark prints it with 1024-based prefixes,
// so "M/s" there is MiB/s. The BPE word cache is warm after the first iteration, as it is in a
// server; BM_EncodeCold defeats it with words never seen before.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "core/tokenizer/sentencepiece_tokenizer.h"
#include "core/tokenizer/tokenizer.h"

namespace {

std::string data_dir() {
  const char* env = std::getenv("DRIFT_TEST_DATA");
  return env && *env ? env : DRIFT_DEFAULT_TEST_DATA;
}

const std::vector<std::string>& turns() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> out;
    const std::string path = data_dir() + "/datasets/mt_bench.jsonl";
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) {
        const nlohmann::json question = nlohmann::json::parse(line);  // outlives the loop below
        for (const auto& turn : question.at("turns")) out.push_back(turn.get<std::string>());
      }
    if (out.empty()) {
      std::fprintf(stderr, "no MT-Bench turns in %s (set DRIFT_TEST_DATA)\n", path.c_str());
      std::exit(1);
    }
    return out;
  }();
  return all;
}

const drift::Tokenizer& tokenizer(const std::string& which) {
  static std::map<std::string, std::unique_ptr<drift::Tokenizer>> cache;
  auto& slot = cache[which];
  if (!slot) {
    if (which.ends_with(".model")) slot = std::make_unique<drift::SentencePieceTokenizer>(data_dir() + "/" + which);
    else slot = drift::load_tokenizer(data_dir() + "/" + which);
  }
  return *slot;
}

void BM_Encode(benchmark::State& state, const std::string& which) {
  const drift::Tokenizer& tok = tokenizer(which);
  int64_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    for (const std::string& text : turns()) {
      auto ids = tok.encode(text);
      benchmark::DoNotOptimize(ids.data());
      bytes += static_cast<int64_t>(text.size());
      tokens += static_cast<int64_t>(ids.size());
    }
  }
  state.SetBytesProcessed(bytes);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

// Every word of every turn gets a fresh random prefix of four letters each iteration, so the
// words the BPE model sees are new and its per-word cache cannot help: the worst case of a long,
// novel prompt. Pieces without letters (punctuation, digits, whitespace) stay as they are and
// may still hit the cache, as they would in real text.
std::vector<std::string> salted_turns(std::mt19937& rng) {
  std::uniform_int_distribution<int> letter('a', 'z');
  std::vector<std::string> texts;
  for (const std::string& text : turns()) {
    std::string salted;
    salted.reserve(text.size() * 2);
    bool in_word = false;
    for (char c : text) {
      const bool is_letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
      if (is_letter && !in_word)
        for (int i = 0; i < 4; ++i) salted += static_cast<char>(letter(rng));
      in_word = is_letter;
      salted += c;
    }
    texts.push_back(std::move(salted));
  }
  return texts;
}

// Novel words on a tokenizer whose word cache is already full of other words, the steady state
// of a long-running server. (Measured from a fresh process instead, the first rounds also pay
// for filling the cache and the figure would depend on the iteration count.)
void BM_EncodeCold(benchmark::State& state, const std::string& which) {
  const drift::Tokenizer& tok = tokenizer(which);
  // One generator for the whole run: a repetition must not replay the words of an earlier one.
  static std::mt19937 rng(7);
  constexpr int kCacheFillingRounds = 20;  // > 131072 distinct words, the cache's capacity
  static std::map<std::string, bool> filled;
  if (!filled[which]) {
    for (int round = 0; round < kCacheFillingRounds; ++round)
      for (const std::string& text : salted_turns(rng)) benchmark::DoNotOptimize(tok.encode(text).data());
    filled[which] = true;
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::vector<std::string> texts = salted_turns(rng);
    state.ResumeTiming();
    for (const std::string& text : texts) {
      benchmark::DoNotOptimize(tok.encode(text).data());
      bytes += static_cast<int64_t>(text.size());
    }
  }
  state.SetBytesProcessed(bytes);
}

void BM_Decode(benchmark::State& state, const std::string& which) {
  const drift::Tokenizer& tok = tokenizer(which);
  std::vector<std::vector<int32_t>> encoded;
  int64_t per_round = 0;
  for (const std::string& text : turns()) {
    encoded.push_back(tok.encode(text));
    per_round += static_cast<int64_t>(text.size());
  }
  int64_t bytes = 0;
  for (auto _ : state) {
    for (const auto& ids : encoded) benchmark::DoNotOptimize(tok.decode(ids).data());
    bytes += per_round;
  }
  state.SetBytesProcessed(bytes);
}

#define DRIFT_TOKENIZER_BENCH(name, path)                            \
  BENCHMARK_CAPTURE(BM_Encode, name, std::string(path));             \
  BENCHMARK_CAPTURE(BM_EncodeCold, name, std::string(path));         \
  BENCHMARK_CAPTURE(BM_Decode, name, std::string(path))

DRIFT_TOKENIZER_BENCH(llama3, "tokenizers/llama3");
DRIFT_TOKENIZER_BENCH(qwen3, "tokenizers/qwen3");
DRIFT_TOKENIZER_BENCH(llama2, "tokenizers/llama2/tokenizer.model");
DRIFT_TOKENIZER_BENCH(tok512, "models/stories260K/tokenizer.model");

}  // namespace

BENCHMARK_MAIN();
