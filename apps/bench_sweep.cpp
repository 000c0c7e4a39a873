#include "apps/bench_sweep.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/error.h"
#include "core/model/model_config.h"
#include "core/model/model_layout.h"
#include "core/model/model_runner.h"
#include "core/model/model_weights.h"

namespace drift::app {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string kind;
  bool graphs = true;
  int64_t batch = 0, context = 0, tokens = 0;  // tokens: rows of the forward
  double step_ms = 0, tokens_per_s = 0, bytes = 0, roofline = 0;
  double tflops = 0;  // prefill rows: the forward's matrix arithmetic per second (0: not computed)
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Builds synthetic forwards over a page pool handed out front to back (contents are whatever
// the pool holds: timing does not depend on values).
class SweepBatches {
 public:
  SweepBatches(int64_t block_size, int64_t vocab) : block_(block_size), vocab_(vocab) {}

  // `batch` sequences with `context` positions each, one new token per sequence (at the end).
  ForwardBatch decode(int64_t batch, int64_t context) {
    ForwardBatch b;
    for (int64_t s = 0; s < batch; ++s) {
      add_sequence(b, context);
      add_token(b, static_cast<int32_t>(s), context - 1, context);
    }
    return b;
  }
  // One sequence's prompt of `len` tokens in one chunk; logits for the last token only.
  ForwardBatch prefill(int64_t len) {
    ForwardBatch b;
    add_sequence(b, len);
    for (int64_t p = 0; p < len; ++p) add_token(b, 0, p, p + 1);
    b.logit_rows = {static_cast<int32_t>(len - 1)};
    return b;
  }
  // A decode token at `context` plus a draft tree of `nodes` (binary: node i's parent is
  // (i - 1) / 2, node 0 hangs off the root), as the speculation core lays it out.
  ForwardBatch verify(int64_t context, int64_t nodes) {
    ForwardBatch b;
    add_sequence(b, context + nodes);
    const int64_t root = context - 1, words = (nodes + 63) / 64;
    std::vector<int64_t> depth(nodes);
    std::vector<std::vector<uint64_t>> bits(nodes, std::vector<uint64_t>(words, 0));
    for (int64_t i = 0; i < nodes; ++i) {
      const int64_t parent = i == 0 ? -1 : (i - 1) / 2;
      depth[i] = parent < 0 ? 1 : depth[parent] + 1;
      if (parent >= 0) bits[i] = bits[parent];
      bits[i][i / 64] |= uint64_t{1} << (i % 64);
    }
    b.attention.mask_words = words;
    add_token(b, 0, root, context);
    b.attention.mask_start.push_back(static_cast<int32_t>(context));
    b.attention.mask.insert(b.attention.mask.end(), words, 0);
    for (int64_t i = 0; i < nodes; ++i) {
      add_token(b, 0, root + depth[i], context + i + 1);
      b.attention.slots.back() = slot(0, b, context + i);
      b.attention.mask_start.push_back(static_cast<int32_t>(context));
      b.attention.mask.insert(b.attention.mask.end(), bits[i].begin(), bits[i].end());
    }
    return b;
  }
  int64_t pages_used() const { return next_page_; }
  void reset() { next_page_ = 0; }

 private:
  void add_sequence(ForwardBatch& b, int64_t len) {
    std::vector<int32_t> table;
    for (int64_t p = 0; p < (len + block_ - 1) / block_; ++p) table.push_back(static_cast<int32_t>(next_page_++));
    b.attention.block_tables.push_back(std::move(table));
  }
  int64_t slot(int32_t seq, const ForwardBatch& b, int64_t pos) const {
    return static_cast<int64_t>(b.attention.block_tables[seq][pos / block_]) * block_ + pos % block_;
  }
  void add_token(ForwardBatch& b, int32_t seq, int64_t position, int64_t kv_len) {
    b.tokens.push_back(static_cast<int32_t>(rng_() % vocab_));
    b.positions.push_back(static_cast<int32_t>(position));
    b.attention.token_seq.push_back(seq);
    b.attention.kv_len.push_back(static_cast<int32_t>(kv_len));
    b.attention.slots.push_back(slot(seq, b, position));
    b.logit_rows.push_back(static_cast<int32_t>(b.tokens.size() - 1));
  }

  int64_t block_, vocab_;
  int64_t next_page_ = 0;
  std::mt19937 rng_{5};
};

// The weights a layer's attention and a dense MLP hold (parameters).
double attention_weights(const ModelConfig& c) {
  return static_cast<double>(c.hidden_size) * (c.num_heads + 2 * c.num_kv_heads) * c.head_dim +
         static_cast<double>(c.num_heads) * c.head_dim * c.hidden_size;
}
double mlp_weights(const ModelConfig& c) { return 3.0 * c.hidden_size * c.intermediate_size; }

// Distinct experts `rows` tokens are expected to choose (each picks experts_per_token of
// num_experts, independently and uniformly): num_experts * (1 - (1 - k / E)^rows).
double expected_experts(const ModelConfig& c, int64_t rows) {
  const double e = static_cast<double>(c.moe.num_experts), k = static_cast<double>(c.moe.experts_per_token);
  return e * (1.0 - std::pow(1.0 - k / e, static_cast<double>(rows)));
}

// The weight bytes a forward of `rows` tokens reads (the active-parameter roofline's numerator):
// attention and the head always; a dense MLP whole; a mixture of experts its router and the
// experts the rows are expected to choose, MXFP4 at 17 bytes per 32 weights (16 of codes, one
// scale). elem: the storage type's size.
double weight_bytes(const ModelConfig& c, size_t elem, int64_t rows) {
  double mlp = mlp_weights(c) * static_cast<double>(elem);
  if (c.moe.num_experts > 0) {
    const double expert_bytes = c.moe.mxfp4 ? mlp_weights(c) * 17.0 / 32.0 : mlp_weights(c) * static_cast<double>(elem);
    mlp = static_cast<double>(c.hidden_size) * c.moe.num_experts * elem + expected_experts(c, rows) * expert_bytes;
  }
  const double per_layer = attention_weights(c) * static_cast<double>(elem) + mlp;
  return per_layer * c.num_layers + static_cast<double>(c.vocab_size) * c.hidden_size * elem;
}

// The matrix arithmetic of a prefill of `len` tokens (prefill is compute-bound: its rows report
// TFLOP/s, to set against the device's dense peak): 2 flops a weight a row for the projections,
// one logit row, and causal attention (q k^T and p v: 4 * head_dim flops a (query, key) pair a
// head; query i sees i + 1 keys).
double prefill_flops(const ModelConfig& c, int64_t len) {
  const double mlp = c.moe.num_experts > 0 ? mlp_weights(c) * c.moe.experts_per_token : mlp_weights(c);
  const double projections = (attention_weights(c) + mlp) * c.num_layers;  // a token's own (active) weights
  const double pairs = static_cast<double>(len) * (len + 1) / 2;
  const double attention = 4.0 * c.head_dim * c.num_heads * pairs * c.num_layers;
  return 2.0 * projections * len + 2.0 * c.vocab_size * c.hidden_size + attention;
}

// Device copy bandwidth, counting bytes read plus bytes written (as the roofline counts reads).
double copy_bandwidth(Backend& backend) {
  const int64_t elems = int64_t{1} << 29;  // 1 GiB of bf16 (or 2 GiB of fp32 on the CPU)
  Tensor a = backend.alloc({elems}, backend.compute_dtype()), b = backend.alloc({elems}, backend.compute_dtype());
  backend.copy(a, b);
  backend.synchronize();
  std::vector<double> times;
  for (int i = 0; i < 10; ++i) {
    const auto t0 = Clock::now();
    backend.copy(a, b);
    backend.synchronize();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(a.nbytes()) / median(times);
}

}  // namespace

nlohmann::json run_forward_sweep(const EngineConfig& config, const SweepOptions& o) {
  if (config.engine.tensor_parallel_size > 1)
    fail(
        "drift bench --sweep times one process's forward; engine.tensor_parallel_size = {} is measured by the "
        "scenario benchmarks (drop --sweep)",
        config.engine.tensor_parallel_size);
  const ModelConfig model = load_model_config(config.model.path);
  auto backend = create_backend(config);
  const int64_t block = config.kv_cache.block_size;
  const KVLayout layout = ModelLayout{model}.kv_layout(block, backend->compute_dtype());
  // Enough pages for the largest row: 64 sequences of 512 + 128, or the largest long-context batch
  // of max_context (one, by default) + a tree.
  const int64_t long_batch = *std::max_element(o.long_batches.begin(), o.long_batches.end());
  const int64_t tokens = std::max<int64_t>(64 * (512 + 2 * block), long_batch * (o.max_context + 2 * block) + 64);
  const int64_t pages = tokens / block + 64;
  spdlog::info("sweep: {} on {}, {} KV pages ({:.1f} GiB)", config.model.path, backend->name(), pages,
               pages * layout.bytes_per_page() / 1073741824.0);
  ModelRunner runner(model, load_model_weights(config.model.path, model, *backend), *backend, pages, block);
  const double bandwidth = copy_bandwidth(*backend);
  const size_t elem = dtype_size(backend->compute_dtype());
  const double weights = weight_bytes(model, elem, 1);  // a batch-1 decode's (all of a dense model's)
  const double kv_per_token = static_cast<double>(layout.bytes_per_token());

  SweepBatches batches(block, model.vocab_size);
  std::vector<Row> rows;
  auto wanted = [&](const char* kind) { return o.only.empty() || o.only.find(kind) != std::string::npos; };
  bool graphs = true;
  auto measure = [&](const std::string& kind, int64_t batch, int64_t context, const ForwardBatch& b, double tokens_done,
                     double kv_tokens_read) {
    // Two warm-ups (the second records the CUDA graph); forwards over a second (long prefills on
    // the CPU or without a tensor-core attention) get one warm-up and three timed runs.
    // Each forward is the engine's step: greedy picks made on the device, only the token ids come
    // back (forward() would also copy every row's logits to the host: 33 MB at batch 64).
    const std::vector<RowSampling> greedy(b.logit_rows.size());
    const auto w0 = Clock::now();
    runner.forward_picks(b, greedy);
    const bool slow = std::chrono::duration<double>(Clock::now() - w0).count() > 1.0;
    if (!slow) runner.forward_picks(b, greedy);
    std::vector<double> times;
    for (int64_t i = 0; i < (slow ? std::min<int64_t>(o.repeats, 3) : o.repeats); ++i) {
      const auto t0 = Clock::now();
      runner.forward_picks(b, greedy);  // returns the picks: the step has finished
      times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    Row r{kind, graphs, batch, context, b.num_tokens()};
    const double t = median(times);
    r.step_ms = t * 1e3;
    r.tokens_per_s = tokens_done / t;
    r.bytes = weight_bytes(model, elem, b.num_tokens()) + kv_per_token * kv_tokens_read;
    r.roofline = r.bytes / t / bandwidth;
    rows.push_back(r);
    std::fprintf(stderr, "  %-8s %-6s batch %3lld context %6lld: %8.3f ms, %9.1f tok/s, %5.1f%% of roofline\n",
                 kind.c_str(), graphs ? "graph" : "eager",
                 static_cast<long long>(batch), static_cast<long long>(context), r.step_ms, r.tokens_per_s,
                 100 * r.roofline);
  };

  if (wanted("decode")) {
    for (int64_t context : {int64_t{512}, int64_t{4096}, int64_t{32768}}) {
      if (context > o.max_context) continue;
      for (int64_t batch : kSweepDecodeBatches) {
        const bool long_batch_wanted =
            std::find(o.long_batches.begin(), o.long_batches.end(), batch) != o.long_batches.end();
        if (context > 512 && !long_batch_wanted) continue;  // long contexts at --sweep-long-batches only
        batches.reset();
        measure("decode", batch, context, batches.decode(batch, context), batch, static_cast<double>(batch) * context);
      }
    }
  }
  if (wanted("prefill")) {
    for (int64_t len : {512, 8192}) {
      if (len > std::max<int64_t>(512, o.max_context)) continue;  // --sweep-max-context bounds prefills too
      batches.reset();
      measure("prefill", 1, len, batches.prefill(len), len, len);
      rows.back().tflops = prefill_flops(model, len) / (rows.back().step_ms * 1e-3) / 1e12;
    }
  }
  if (wanted("verify")) {
    batches.reset();
    const int64_t context = std::min<int64_t>(4096, o.max_context);
    measure("decode", 1, context, batches.decode(1, context), 1, context);
    for (int64_t nodes : {4, 8, 16, 32}) {
      batches.reset();
      measure(fmt::format("verify{}", nodes), 1, context, batches.verify(context, nodes), 1, context + nodes);
    }
  }

  if (wanted("graphs")) {  // the same small forwards without CUDA graphs: the graphs' gain
    graphs = false;
    backend->set_forward_graphs(false);
    for (int64_t batch : {1, 8, 64}) {
      batches.reset();
      measure("decode", batch, 512, batches.decode(batch, 512), batch, static_cast<double>(batch) * 512);
    }
    batches.reset();
    measure("verify16", 1, 4096, batches.verify(4096, 16), 1, 4096 + 16);
    backend->set_forward_graphs(true);
  }

  std::printf("forward sweep: %s, backend %s, copy bandwidth %.0f GB/s (read + write), weights a batch-1 decode "
              "reads %.2f GB (roofline: the rows' active weights and KV)\n",
              config.model.path.c_str(), backend->name().c_str(), bandwidth / 1e9, weights / 1e9);
  std::printf(
      "| row | graphs | batch | context | forward rows | step ms | tokens/s | roofline | TFLOP/s |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  nlohmann::json json;
  json["model"] = config.model.path;
  json["backend"] = backend->name();
  json["copy_bandwidth_gbps"] = bandwidth / 1e9;
  json["weight_bytes"] = weights;
  json["kv_bytes_per_token"] = kv_per_token;
  for (const Row& r : rows) {
    std::printf("| %s | %s | %lld | %lld | %lld | %.3f | %.1f | %.1f%% | %s |\n", r.kind.c_str(),
                r.graphs ? "yes" : "no", static_cast<long long>(r.batch), static_cast<long long>(r.context),
                static_cast<long long>(r.tokens), r.step_ms, r.tokens_per_s, 100 * r.roofline,
                r.tflops > 0 ? fmt::format("{:.4g}", r.tflops).c_str() : "");
    json["rows"].push_back({{"kind", r.kind},
                            {"cuda_graphs", r.graphs},
                            {"batch", r.batch},
                            {"context", r.context},
                            {"forward_rows", r.tokens},
                            {"step_ms", r.step_ms},
                            {"tokens_per_s", r.tokens_per_s},
                            {"bytes_read", r.bytes},
                            {"roofline_fraction", r.roofline},
                            {"tflops", r.tflops}});
  }
  return json;
}

}  // namespace drift::app
